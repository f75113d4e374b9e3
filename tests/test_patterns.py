"""graders._patterns: a pattern is run only on a text that can hold a match, and answers exactly as re does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graders._patterns as patterns
import graders.claims as claims
import graders.comms as comms
import graders.disclosure as disclosure
from graders._patterns import FOLDS_TO_ASCII, Pattern, compile_expression, compile_pattern

#: Every filtered pattern the text graders search with, by name.
PATTERNS: dict[str, Pattern] = {
    **{f"claims.{name}": p for name, p in vars(claims).items() if isinstance(p, Pattern)},
    **{f"claims.{kind}": p for kind, p in claims._PATTERNS},
    **{f"claims.base.{kind}": p for kind, p in claims._BASE},
    **{f"disclosure.{name}": p for name, p in vars(disclosure).items() if isinstance(p, Pattern)},
}


def _pieces(pattern: Pattern) -> list[str]:
    """The strings a pattern's matches need, as written and in capitals: what a text that nearly matches holds."""
    strings = {s for branch in pattern.needs or () for group in branch for s in group}
    folded = {s.replace("s", "\u017f").replace("k", "\u212a").replace("i", "\u0131") for s in strings}
    return sorted(strings | folded | {s.upper() for s in strings} | {s.title() for s in strings})


_WORDS = ["the", "fee", "has", "been", "your", "I've", "we", "payment", "instalments", "moved", "to", "15th", "is",
          "now", "will", "not", "can't", "2026-05-15", "333.34", "USD", "pln_012", "jon.park@example.com", "Park",
          "\n", ".", ",", ";", " - ", "—", "’", "(", ")", "’s", "İ", "ı", "ſ", "K", "é", "  "]


@st.composite
def texts_near(draw: st.DrawFn, pattern: Pattern) -> str:
    """A text of the pattern's own needed strings, common words and folding characters, in any order."""
    vocabulary = _pieces(pattern) + _WORDS
    parts = draw(st.lists(st.one_of(st.sampled_from(vocabulary), st.text(max_size=3)), max_size=14))
    joints = draw(st.lists(st.sampled_from(["", " ", "  ", "\n"]), min_size=len(parts), max_size=len(parts)))
    return "".join(p + j for p, j in zip(parts, joints, strict=True))


class TestKeptBetweenProcesses:
    """Expressions compiled in one process are read back from the disk cache by the next, as bytecode is."""

    @staticmethod
    def _kept(tmp_path, monkeypatch: pytest.MonkeyPatch) -> patterns._Kept:
        monkeypatch.setenv("SIMWORLD_CACHE_DIR", str(tmp_path))
        monkeypatch.delenv("SIMWORLD_NO_CACHE", raising=False)
        kept = patterns._Kept()
        monkeypatch.setattr(patterns, "_KEPT", kept)
        return kept

    def test_each_pattern_read_back_is_what_re_compile_gives(self, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Every grader pattern, compiled in one process and read back in the next, has the needs a parse gives and
        compiles to re.compile's expression (the same code, groups and names), without being parsed again."""
        first = self._kept(tmp_path, monkeypatch)
        fresh = {name: Pattern(p.pattern, p.flags) for name, p in PATTERNS.items()}
        for p in fresh.values():
            assert p.regex is not None
        first.save()
        assert len(list((tmp_path / "patterns").iterdir())) == 1
        self._kept(tmp_path, monkeypatch)
        monkeypatch.setattr(patterns, "_parse", lambda *a: pytest.fail("parsed again"))
        for name, p in PATTERNS.items():
            again = Pattern(p.pattern, p.flags)
            expected = re.compile(p.pattern, p.flags)
            assert again.needs == fresh[name].needs, name
            assert again.regex == expected, name
            assert (again.regex.groups, again.regex.groupindex) == (expected.groups, expected.groupindex), name

    def test_a_damaged_cache_is_compiled_afresh(self, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A cache file that cannot be read, or whose code the engine refuses, costs a fresh compile, never a wrong
        answer."""
        first = self._kept(tmp_path, monkeypatch)
        p = Pattern(r"\bfee\b.{0,20}?waived", re.I)
        assert p.search("the fee was waived") is not None
        first.save()
        (path,) = (tmp_path / "patterns").iterdir()
        raw = path.read_bytes()
        bad_code = {key: [flags, [9999, *code], *rest] for key, (flags, code, *rest) in orjson.loads(raw).items()}
        for damaged in (raw[: len(raw) // 2], orjson.dumps(bad_code)):
            path.write_bytes(damaged)
            self._kept(tmp_path, monkeypatch)
            again = Pattern(p.pattern, p.flags)
            assert again.regex == re.compile(p.pattern, p.flags)
            assert again.search("THE FEE WAS WAIVED").span() == (4, 18)

    def test_needs_read_without_a_match_are_kept_too(self, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A pattern whose needs a process read, but which no text of it reached, is not parsed again by the next
        process; that process parses it only when a text may hold a match, and compiles re.compile's expression."""
        first = self._kept(tmp_path, monkeypatch)
        p = Pattern(r"\bfee\b.{0,20}?waived", re.I)
        assert p.search("nothing about it here") is None
        with pytest.raises(AttributeError):
            object.__getattribute__(p, "regex")
        first.save()
        self._kept(tmp_path, monkeypatch)
        parsed = []
        real_parse = patterns._parse
        monkeypatch.setattr(patterns, "_parse", lambda *a: parsed.append(a) or real_parse(*a))
        again = Pattern(p.pattern, p.flags)
        assert again.needs == p.needs and again.search("still nothing") is None
        assert parsed == []
        assert again.search("The FEE was waived").span() == (4, 18)
        assert again.regex == re.compile(p.pattern, p.flags) and len(parsed) == 1

    def test_compiled_code_is_not_replaced_by_needs_alone(self, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Two patterns of one expression, one compiled and one whose needs alone were read, keep the compiled one."""
        first = self._kept(tmp_path, monkeypatch)
        compiled, unread = Pattern(r"refund.{0,9}issued"), Pattern(r"refund.{0,9}issued")
        assert compiled.search("refund was issued") is not None
        assert unread.search("nothing") is None
        first.save()
        self._kept(tmp_path, monkeypatch)
        monkeypatch.setattr(patterns, "_parse", lambda *a: pytest.fail("parsed again"))
        assert Pattern(compiled.pattern).regex == re.compile(compiled.pattern)

    def test_nothing_is_kept_with_the_disk_cache_off(self, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
        """SIMWORLD_NO_CACHE turns this cache off with the end states'."""
        kept = self._kept(tmp_path, monkeypatch)
        monkeypatch.setenv("SIMWORLD_NO_CACHE", "1")
        assert Pattern(r"fee.{0,9}waived").search("fee was waived") is not None
        kept.save()
        assert not (tmp_path / "patterns").exists()


class TestFirstUse:
    def test_nothing_is_compiled_before_it_is_used(self) -> None:
        """Making a pattern parses nothing; its first text reads its needs (filtering at once), and only the first
        text that may hold a match compiles it."""
        p = compile_pattern(r"fee.{0,20}waived")
        for name in ("needs", "regex"):
            with pytest.raises(AttributeError):
                object.__getattribute__(p, name)
        assert p.search("no such words here") is None
        assert object.__getattribute__(p, "needs") == ((("waived",), ("fee",)),)
        with pytest.raises(AttributeError):
            object.__getattribute__(p, "regex")
        assert p.search("The fee was waived").group(0) == "fee was waived"
        assert object.__getattribute__(p, "regex") == re.compile(r"fee.{0,20}waived")

    def test_a_malformed_expression_fails_as_re_compile_does(self) -> None:
        """The error of a malformed expression is re's own, raised at its first use."""
        p = compile_pattern(r"fee(")
        with pytest.raises(re.error) as got:
            p.search("fee")
        with pytest.raises(re.error) as expected:
            re.compile(r"fee(")
        assert str(got.value) == str(expected.value)

    @pytest.mark.parametrize("name", sorted(PATTERNS))
    def test_each_pattern_compiles_to_what_re_compile_gives(self, name: str) -> None:
        """The expression compiled from the tree its needs are read from is re.compile's: the same code (Pattern
        equality compares it), groups and group names."""
        pattern = PATTERNS[name]
        expected = re.compile(pattern.pattern, pattern.flags)
        assert pattern.regex == expected
        assert (pattern.regex.groups, pattern.regex.groupindex) == (expected.groups, expected.groupindex)

    def test_without_the_parser_re_compiles_and_nothing_is_filtered(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Where the standard library's parser is not what this module reads, re.compile compiles the expression
        and every text is searched: slower, the same answers."""
        monkeypatch.setattr(patterns, "_sre", None)
        p = compile_pattern(r"\bfee\b.{0,10}?\bwaived\b", re.I)
        assert p.needs is None and p.may_match("nothing") and p.regex == re.compile(p.pattern, re.I)
        assert p.search("the FEE was WAIVED").span() == (4, 18)


class TestWhatAMatchNeeds:
    def test_every_grader_pattern_knows_what_it_needs(self) -> None:
        """Each clause pattern of the claims grader has strings to look for (else it would run on every clause)."""
        unfiltered = [kind for kind, p in claims._PATTERNS + claims._BASE if p.needs is None]
        assert unfiltered == []

    def test_a_run_of_literals_and_a_gap(self) -> None:
        """A pattern needs each of its literal runs: the longer (rarer) first."""
        p = compile_pattern(r"\bfee\b.{0,10}?\bwaived\b", re.I)
        assert p.needs == ((("waived",), ("fee",)),)

    def test_an_alternation_needs_one_of_its_branches(self) -> None:
        """A branch of literals is one set of strings; branches of several parts are kept apart."""
        assert compile_pattern(r"\b(?:fees?|charges?)\b").needs == ((("charge", "fee"),),)
        assert compile_pattern(r"fee.*waived|refund.*sent").needs == ((("waived",), ("fee",)),
                                                                     (("refund",), ("sent",)))

    def test_what_may_be_absent_is_not_needed(self) -> None:
        """An optional part, a class, a lookaround and a branch that needs nothing add no need."""
        assert compile_pattern(r"(?:very )?\d+").needs is None
        assert compile_pattern(r"fee|\d+").needs is None
        assert compile_pattern(r"(?<!no )fee").needs == ((("fee",),),)

    def test_a_text_without_the_words_is_not_searched(self) -> None:
        """may_match is False only when none of the needed strings is in the text (in any case)."""
        p = compile_pattern(r"\bfee\b.{0,10}?\bwaived\b", re.I)
        assert p.needs is not None  # the filter is on from the first text
        assert not p.may_match("the due date moved")
        assert not p.may_match("the fee stays")
        assert p.may_match("the FEE was WAIVED")

    def test_a_text_with_a_folding_character_is_searched(self) -> None:
        """A character that an ASCII letter matches when case is ignored (the long s for s) sends the text to re
        unfiltered: its lower case is not what re compares."""
        p = compile_pattern(r"\bpast\b", re.I)
        assert p.regex.search("pa\u017ft")
        assert p.may_match("pa\u017ft") and p.search("pa\u017ft")

    def test_each_text_is_read_as_itself_when_patterns_take_turns(self) -> None:
        """What may_match keeps of the last text it read is that text's own: patterns and texts taking turns, and
        threads reading at once, each get their own text's answer (the long s fold included)."""
        fee, past = compile_pattern(r"\bfee\b", re.I), compile_pattern(r"\bpast\b", re.I)
        texts = ["the FEE stays", "the due date moved", "pa\u017ft due", "".join(["the fee", " stays"])]
        expected = [(True, False), (False, False), (True, True), (True, False)]
        for _ in range(3):
            assert [(fee.may_match(t), past.may_match(t)) for t in texts] == expected

        def read(n: int) -> list[tuple[bool, bool]]:
            return [(fee.may_match(texts[i % 4]), past.may_match(texts[i % 4])) for i in range(n, n + 2000)]

        with ThreadPoolExecutor(4) as pool:
            for n, answers in zip(range(4), pool.map(read, range(4)), strict=True):
                assert answers == [expected[i % 4] for i in range(n, n + 2000)]

    def test_folds_to_ascii_is_every_such_character(self) -> None:
        """FOLDS_TO_ASCII is exactly the characters outside ASCII that re matches to an ASCII letter ignoring case,
        and holds every character whose lower case is longer than itself."""
        letter = re.compile(r"[a-z]", re.I)
        found = {chr(c) for c in range(128, sys.maxunicode + 1) if letter.match(chr(c))}
        longer = {chr(c) for c in range(sys.maxunicode + 1) if len(chr(c).lower()) != 1}
        assert found == FOLDS_TO_ASCII
        assert longer <= FOLDS_TO_ASCII


@pytest.mark.parametrize("name", sorted(PATTERNS))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_a_filtered_pattern_answers_as_re(name: str, data: st.DataObject) -> None:
    """On texts made of the words a pattern looks for, each method answers exactly as the expression's own."""
    pattern = PATTERNS[name]
    text = data.draw(texts_near(pattern))
    rx = pattern.regex
    if rx.search(text):
        assert pattern.may_match(text), f"{name} skipped a text it matches: {text!r}"
    found, expected = pattern.search(text), rx.search(text)
    assert (found and found.span()) == (expected and expected.span())
    assert pattern.sub("#", text) == rx.sub("#", text)
    assert pattern.split(text) == rx.split(text)
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in rx.finditer(text)]
    assert pattern.findall(text) == rx.findall(text)


class TestExpressions:
    """compile_expression: an expression run as it is (at a position, unfiltered), compiled at its first use."""

    #: The communications grader's expressions, by name.
    EXPRESSIONS = {name: e for name, e in vars(comms).items() if isinstance(e, patterns._Expression)}

    def test_the_communications_grader_compiles_its_expressions_at_first_use(self) -> None:
        """Importing the grader (in a process of its own) compiles none of its expressions."""
        code = ("import sys, graders.comms as c, graders._patterns as p\n"
                "made = [n for n, e in vars(c).items() if isinstance(e, p._Expression) and 'search' in vars(e)]\n"
                "print(len([e for e in vars(c).values() if isinstance(e, p._Expression)]), made)")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "SIMWORLD_NO_CACHE": "1"})
        count, made = done.stdout.split(" ", 1)
        assert int(count) >= 40 and made.strip() == "[]", done.stderr[-2000:]

    @pytest.mark.parametrize("name", sorted(EXPRESSIONS))
    def test_each_is_what_re_compile_gives(self, name: str) -> None:
        """Each of the grader's expressions is re.compile's: the same code, flags, groups and names."""
        expression = self.EXPRESSIONS[name]
        expected = re.compile(expression._of.pattern, expression._of.flags)
        assert expression._of.regex == expected
        assert (expression.pattern, expression.flags, expression.groups, expression.groupindex) == (
            expected.pattern, expected.flags, expected.groups, expected.groupindex)

    def test_no_grader_tells_expressions_apart_by_identity(self) -> None:
        """A match's ``.re`` is the compiled expression, never the lazy object a module holds: no grader compares
        either by identity or equality (``found.re is _ISO_DATE_AT`` was always false, and an ISO date paired with
        an amount raised IndexError)."""
        import ast
        from pathlib import Path

        offending = []
        for path in sorted(Path(comms.__file__).parent.glob("*.py")):
            module = vars(__import__(f"graders.{path.stem}", fromlist=["_"])) if path.stem != "__init__" else {}
            lazy = {name for name, value in module.items() if isinstance(value, patterns._Expression)}
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Compare):
                    continue
                for side in (node.left, *node.comparators):
                    if (isinstance(side, ast.Attribute) and side.attr == "re") or (
                            isinstance(side, ast.Name) and side.id in lazy):
                        offending.append(f"{path.name}:{node.lineno}")
        assert offending == []

    def test_it_answers_as_the_compiled_expression(self) -> None:
        """search, match, finditer, sub and split at positions answer as re's; an attribute the compiled expression
        lacks is an AttributeError; a malformed expression raises re's error at its first use."""
        text = "Paid 12 May; next 3 June and 14 July."
        lazy, expected = compile_expression(r"(?P<d>\d{1,2}) (?P<m>[A-Z][a-z]+)"), re.compile(
            r"(?P<d>\d{1,2}) (?P<m>[A-Z][a-z]+)")
        assert lazy.search(text, 10).span() == expected.search(text, 10).span()
        assert lazy.match(text, 5).groupdict() == expected.match(text, 5).groupdict()
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in expected.finditer(text)]
        assert lazy.sub(r"\g<m>", text) == expected.sub(r"\g<m>", text)
        assert lazy.split(text) == expected.split(text)
        with pytest.raises(AttributeError):
            lazy.no_such_thing  # noqa: B018
        broken = compile_expression(r"fee(")
        with pytest.raises(re.error):
            broken.search("fee")
