"""Patterns that look for their words before they run: what the text graders search a clause with.

Most clauses hold none of the words most patterns are about (a clause about a due day names no fee,
no refund, no premium), and a regular expression with ``.{0,60}?`` gaps costs far more to run than a
substring test. :class:`Pattern` reads, once, from the compiled expression itself, the strings a match
must contain: for each branch of the expression, a few sets of strings, one string of each set in
the match (``fee``/``charge``/``penalt`` and ``waived``/``removed``/... for a fee said waived). A text
that cannot hold a match (compared in lower case) is not searched. Only ``search``, ``sub``, ``split``,
``finditer`` and ``findall`` are offered, each answering exactly as the expression's own method: the strings are
derived from the expression, never written beside it, so the two cannot drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

# The expression parser of the standard library, the one ``re.compile`` uses: reading its tree is the only way
# to learn what a pattern needs without writing it down twice. Should it ever change shape, every pattern runs
# unfiltered (see ``_required``), which is slower and answers the same.
try:
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - an interpreter without them: nothing is filtered
    _sre = _sre_parse = None

__all__ = ["FOLDS_TO_ASCII", "READ_AFTER", "Pattern", "compile_pattern"]

#: The characters outside ASCII that an ASCII letter of a pattern matches when case is ignored (dotted and
#: dotless i, long s, the Kelvin sign), or whose lower case is two characters (dotted capital I): a text holding
#: one is searched unfiltered, since its lower case is not what the expression compares.
FOLDS_TO_ASCII = frozenset("\u0130\u0131\u017f\u212a")

#: A set of literal alternatives is kept while it has at most this many strings (``(?:a|b)(?:c|d)``: 4).
_MAX_STRINGS = 32
#: How many sets of strings one branch is tested for (the most selective first), and how many branches are kept.
_MAX_SETS, _MAX_BRANCHES = 3, 6

#: What a match needs: any one of the branches; a branch, a string of each of its sets.
Needs = tuple[tuple[tuple[str, ...], ...], ...]
#: A pattern's needs not yet read.
_UNREAD = object()
#: How many texts a pattern searches as it is before it reads what its matches need: reading that parses the
#: expression again (about as costly as compiling it), which a filter repays only over many texts. A short run
#: (one seed of the suite) never pays it; a long one reads each pattern's needs once, early.
READ_AFTER = 64


class Pattern:
    """A compiled expression and what every match of it holds (see :data:`Needs`; None: nothing known).

    Args:
        regex: The compiled expression.
    """

    __slots__ = ("_needs", "_searched", "regex")

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex = regex
        self._needs: Needs | None | object = _UNREAD
        self._searched = 0

    def __repr__(self) -> str:
        return f"Pattern({self.regex.pattern!r}, needs={self.needs!r})"

    @property
    def needs(self) -> Needs | None:
        """What every match holds, read off the expression when first asked for."""
        if self._needs is _UNREAD:
            self._needs = _required(self.regex)
        return self._needs  # type: ignore[return-value]

    def may_match(self, text: str) -> bool:
        """False only when no match of the expression can be in ``text`` (always True for the first
        :data:`READ_AFTER` texts, before the pattern's needs are read)."""
        if self._needs is _UNREAD:
            self._searched += 1
            if self._searched <= READ_AFTER:
                return True
        needs = self.needs
        if needs is None or not text.isascii() and not FOLDS_TO_ASCII.isdisjoint(text):
            return True
        holds = text.lower().__contains__
        for branch in needs:
            for strings in branch:
                if not any(map(holds, strings)):
                    break
            else:
                return True
        return False

    def search(self, text: str) -> re.Match[str] | None:
        """As :meth:`re.Pattern.search`."""
        return self.regex.search(text) if self.may_match(text) else None

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        """As :meth:`re.Pattern.sub`."""
        return self.regex.sub(repl, text) if self.may_match(text) else text

    def split(self, text: str) -> list[str]:
        """As :meth:`re.Pattern.split`."""
        return self.regex.split(text) if self.may_match(text) else [text]

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """As :meth:`re.Pattern.finditer`."""
        return self.regex.finditer(text) if self.may_match(text) else iter(())

    def findall(self, text: str) -> list[Any]:
        """As :meth:`re.Pattern.findall`."""
        return self.regex.findall(text) if self.may_match(text) else []


def compile_pattern(pattern: str, flags: int = 0) -> Pattern:
    """``re.compile(pattern, flags)``, with what its matches need read off it."""
    return Pattern(re.compile(pattern, flags))


def _required(regex: re.Pattern[str]) -> Needs | None:
    """What every match of ``regex`` holds (lower case: see :func:`_plain`), or None when nothing is known."""
    if _sre is None:
        return None
    try:
        found = _needs(_sre_parse.parse(regex.pattern, regex.flags))
    except Exception:  # noqa: BLE001 - a tree of a shape not read here: search unfiltered, as re would
        return None
    if found is None:
        return None
    return tuple(tuple(tuple(sorted(_shortest(s))) for s in branch) for branch in found)


def _shortest(strings: frozenset[str]) -> set[str]:
    """A string holding another of the set adds nothing: the shorter is found wherever the longer is."""
    return {s for s in strings if not any(t != s and t in s for t in strings)}


_Sets = list[frozenset[str]]


def _needs(items: Any) -> list[_Sets] | None:
    """What a sequence of parsed items needs: one of a few branches, each a few sets of strings.

    A run of literal characters (across zero-width assertions, and multiplied out over small classes
    and alternations of literals) needs itself; an alternation needs one of its branches; a group needs
    what its contents need; a repeat at least once needs what its body needs; anything else needs
    nothing of its own. A sequence needs all its parts need: the branches of one alternation in it,
    each with the sets of the other parts (an alternation beyond the first is read as a single set:
    one string of any of its branches' first sets).
    """
    sets: _Sets = []
    branches: list[_Sets] | None = None
    run: set[str] = {""}

    def close() -> None:
        nonlocal run
        if run != {""}:
            sets.append(frozenset(run))
        run = {""}

    for op, av in items:
        strings = _literal_strings(op, av)
        if strings is not None:
            grown = {r + s for r in run for s in strings}
            if len(grown) > _MAX_STRINGS:
                close()
                grown = set(strings)
            run = grown
            continue
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
            continue  # zero width: the characters either side are next to each other in the text
        close()
        need: list[_Sets] | None = None
        if op is _sre.SUBPATTERN:
            need = _needs(av[-1])
        elif op is _sre.ATOMIC_GROUP:
            need = _needs(av)
        elif op is _sre.BRANCH:
            found = [_needs(b) for b in av[1]]
            if all(f is not None for f in found):
                need = [branch for f in found for branch in f]  # type: ignore[union-attr]
                if all(len(b) == 1 for b in need) or len(need) > _MAX_BRANCHES:
                    # one string of any branch's (first) set: exact when each branch is one set
                    need = [[frozenset().union(*(b[0] for b in need))]]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            need = _needs(av[2])
        if not need:
            continue
        if len(need) == 1:
            sets += need[0]
        elif branches is None:
            branches = need
        else:
            sets.append(frozenset().union(*(b[0] for b in need)))
    close()
    if branches is None:
        return [_best(sets)] if sets else None
    return [_best(b + sets) for b in branches]


def _best(sets: _Sets) -> _Sets:
    """The most selective few of ``sets`` (see :func:`_score`), most selective first."""
    return sorted(set(sets), key=_score, reverse=True)[:_MAX_SETS]


def _literal_strings(op: Any, av: Any) -> set[str] | None:
    """The strings (lower case: see :func:`_plain`) one parsed item matches, when it matches only a few fixed strings
    (a literal, a class of literals, a group or an alternation of runs of them); else None."""
    if op is _sre.LITERAL:
        return {chr(av).lower()} if _plain(av) else None
    if op is _sre.IN:
        if len(av) > 8 or not all(o is _sre.LITERAL and _plain(a) for o, a in av):
            return None
        return {chr(a).lower() for _o, a in av}
    if op is _sre.SUBPATTERN:
        return _fixed(av[-1])
    if op is _sre.BRANCH:
        found: set[str] = set()
        for branch in av[1]:
            strings = _fixed(branch)
            if strings is None:
                return None
            found |= strings
        return found if len(found) <= _MAX_STRINGS else None
    return None


def _plain(code: int) -> bool:
    """Whether a literal character is compared as its lower case: printable ASCII, or a character without case
    (a dash, an ellipsis), which only itself matches when case is ignored."""
    if 32 <= code < 127:
        return True
    char = chr(code)
    return code >= 127 and char.lower() == char == char.upper() and not char.isspace() and char.isprintable()


def _fixed(items: Any) -> set[str] | None:
    """The strings a sequence of parsed items matches, when it matches only a few fixed strings; else None."""
    strings = {""}
    for op, av in items:
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
            continue
        more = _literal_strings(op, av)
        if more is None:
            return None
        strings = {a + b for a in strings for b in more}
        if len(strings) > _MAX_STRINGS:
            return None
    return strings if "" not in strings else None


def _score(strings: frozenset[str]) -> tuple[int, int, tuple[str, ...]]:
    """Longer shortest strings first (a longer string is rarer), then fewer strings (fewer tests); then by the
    strings themselves, so the order does not depend on how sets hash."""
    return min(len(s) for s in strings), -len(strings), tuple(sorted(strings))
