"""Patterns that look for their words before they run: what the text graders search a clause with.

Most clauses hold none of the words most patterns are about (a clause about a due day names no fee,
no refund, no premium), and a regular expression with ``.{0,60}?`` gaps costs far more to run than a
substring test. :class:`Pattern` reads, once, from the expression itself (the tree it is compiled
from), the strings a match must contain: for each branch of the expression, a few sets of strings, one
string of each set in the match (``fee``/``charge``/``penalt`` and ``waived``/``removed``/... for a fee
said waived). A text that cannot hold a match (compared in lower case) is not searched. Only
``search``, ``sub``, ``split``, ``finditer`` and ``findall`` are offered, each answering exactly as the
expression's own method: the strings are derived from the expression, never written beside it, so the
two cannot drift.
"""

from __future__ import annotations

import atexit
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson

from simworld._world.diskcache import cache_dir, disk_cache_enabled
from simworld._world.hashing import blake2b

# The expression parser and compiler of the standard library, the ones ``re.compile`` runs: reading the parser's
# tree is the only way to learn what a pattern needs without writing it down twice. Should they ever change shape,
# every pattern is compiled by ``re.compile`` and runs unfiltered (see ``_compiled``), which is slower and answers
# the same.
try:
    import _sre as _sre_engine  # type: ignore[import-not-found]
    from re import _compiler as _sre_compile  # type: ignore[attr-defined]
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - an interpreter without them: nothing is filtered
    _sre = _sre_compile = _sre_engine = _sre_parse = None

__all__ = ["FOLDS_TO_ASCII", "Pattern", "compile_expression", "compile_pattern", "matching"]

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
K = TypeVar("K")


class Pattern:
    """An expression and what every match of it holds (see :data:`Needs`; None: nothing known), both made from one
    parse of it, each when first needed.

    A grader module makes all its patterns when it is imported, and compiling them all costs about what
    importing the graders does; a run reaches most of them, but the texts of a run reach the compiled expression
    of far fewer (a clause with no fee in it never runs a pattern about fees). So the first text a pattern is
    given parses the expression and reads what its matches need from the tree, and only the first text that may
    hold a match compiles that same tree (see :func:`_compiled`): a pattern no text could match is never
    compiled, and a process that reads no text (a run whose agent sends none) parses nothing.

    Args:
        pattern: The expression, as ``re.compile`` takes it.
        flags: Its flags, as ``re.compile`` takes them.
    """

    __slots__ = ("_kept", "_tree", "flags", "needs", "pattern", "regex")
    #: The compiled expression: the one ``re.compile(pattern, flags)`` gives.
    regex: re.Pattern[str]
    #: What every match holds (lower case), or None when nothing is known.
    needs: Needs | None

    def __init__(self, pattern: str, flags: int = 0) -> None:
        # As an int: the parser tests its flags at every character, and an enum flag (re.I) makes each test a call.
        self.pattern, self.flags = pattern, int(flags)
        self._tree: Any = None  # the parsed expression, from reading the needs until it is compiled
        self._kept: _Compiled | None = None  # or what an earlier process compiled, read back instead of parsing

    def __getattr__(self, name: str) -> Any:
        # Only an attribute not yet set comes here: the needs before the first text, the compiled expression before
        # the first text that may hold a match. Two threads may both do either: each makes the same value.
        if name == "needs":
            kept = _KEPT.get(self.pattern, self.flags)
            if kept is not None:  # parsed and compiled by an earlier process: its needs and code, read back
                self._kept = kept
                self.needs = kept.needs
                return self.needs
            self._tree = _parse(self.pattern, self.flags)
            self.needs = None if self._tree is None else _required(self._tree)
            if self._tree is not None:  # kept too, for a process in which no text reaches the compiled expression
                _KEPT.put(self.pattern, self.flags, self.needs)
            return self.needs
        if name == "regex":
            self.needs  # noqa: B018 - read first, so that the expression is parsed once, for both
            kept = self._kept
            regex = None if kept is None else kept.regex(self.pattern)
            if regex is None:  # a tree parsed here; or kept needs alone, or code the engine refused: parsed now
                tree = self._tree if kept is None else _parse(self.pattern, self.flags)
                regex, code = _compiled(self.pattern, self.flags, tree)
                _KEPT.put(self.pattern, self.flags, self.needs, regex, code)
            self.regex = regex
            self._tree = self._kept = None
            return self.regex
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r}, needs={self.needs!r})"

    def may_match(self, text: str) -> bool:
        """False only when no match of the expression can be in ``text``."""
        needs = self.needs
        if needs is None:
            return True
        last = _last_text  # most often the text: a grader asks pattern after pattern about one clause
        holds = last[1] if last[0] is text else _holds(text)
        return holds is None or _held(needs, holds)

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


def _held(needs: Needs, holds: Callable[[str], bool]) -> bool:
    """Whether a text (its lower case's ``__contains__``: ``holds``) holds what some branch of ``needs`` needs."""
    for branch in needs:
        for strings in branch:
            if not any(map(holds, strings)):
                break
        else:
            return True
    return False


def matching(pairs: Iterable[tuple[K, Pattern]], text: str) -> list[K]:
    """``[key for key, pattern in pairs if pattern.search(text)]``, each pattern's needs tested in this one loop
    (a clause is read for every kind of statement at once)."""
    last = _last_text
    holds = last[1] if last[0] is text else _holds(text)
    found = []
    for key, pattern in pairs:
        needs = pattern.needs
        if (needs is None or holds is None or _held(needs, holds)) and pattern.regex.search(text) is not None:
            found.append(key)
    return found


def _holds(text: str) -> Callable[[str], bool] | None:
    """Whether ``text``'s lower case holds a string (None: a text searched unfiltered, see
    :data:`FOLDS_TO_ASCII`), kept as the last text asked about."""
    global _last_text
    holds = None if not text.isascii() and not FOLDS_TO_ASCII.isdisjoint(text) else text.lower().__contains__
    _last_text = (text, holds)  # one tuple, replaced whole: a thread reads a text with its own answer
    return holds


#: The last text :meth:`Pattern.may_match` was given and what :func:`_holds` made of it. The tuple holds the text, so
#: no other string can take its identity while it is kept.
_last_text: tuple[str | None, Callable[[str], bool] | None] = (None, None)


class _Compiled:
    """An expression as :func:`_compiled` compiled it in an earlier process (its code for ``_sre.compile`` and its
    groups), with what its matches need: what a process reads back instead of parsing and compiling it again. An
    expression whose needs were read but which no text of that process reached has its needs alone (``code`` None)."""

    __slots__ = ("code", "flags", "groups", "names", "needs")

    def __init__(self, flags: int, code: list[int] | None, groups: int, names: dict[str, int],
                 needs: Needs | None) -> None:
        self.flags, self.code, self.groups, self.names, self.needs = flags, code, groups, names, needs

    def regex(self, pattern: str) -> re.Pattern[str] | None:
        """The compiled expression (None if no code was kept, or the engine refuses it: then it is compiled
        afresh)."""
        if self.code is None:
            return None
        try:
            return _engine_compile(pattern, self.flags, self.code, self.groups, self.names)
        except Exception:  # noqa: BLE001 - code the engine does not take (it checks what it is given)
            return None


class _Kept:
    """The compiled expressions and needs of the text graders' patterns, kept in the disk cache between processes
    (as Python keeps a module's bytecode): parsing and compiling them is a large part of what a process spends
    before its first graded episode. Read at the first pattern a process uses, written when the process ends if it
    compiled one afresh; under the end-state cache's directory and switch (``SIMWORLD_CACHE_DIR``,
    ``SIMWORLD_NO_CACHE``), in a file named for this interpreter, its regular expression engine and this module's
    own code, so that nothing compiled by another is read."""

    def __init__(self) -> None:
        self._entries: dict[str, _Compiled] | None = None
        self._path: Path | None = None
        self._new: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def _load(self) -> dict[str, _Compiled]:
        entries: dict[str, _Compiled] = {}
        try:
            if _sre_engine is None or not disk_cache_enabled():
                return entries
            own = blake2b(Path(__file__).read_bytes(), digest_size=8).hexdigest()
            version = blake2b(sys.version.encode(), digest_size=8).hexdigest()
            name = f"{sys.implementation.cache_tag}-{version}-{_sre_engine.MAGIC}-{own}.json"
            self._path = cache_dir() / "patterns" / name
            raw = orjson.loads(self._path.read_bytes())
            for key, (flags, code, groups, names, needs) in raw.items():
                entries[key] = _Compiled(flags, code, groups, names, None if needs is None else tuple(
                    tuple(tuple(strings) for strings in branch) for branch in needs))
        except Exception:  # noqa: BLE001 - no file yet, or one that cannot be read: compile afresh
            return entries
        return entries

    def get(self, pattern: str, flags: int) -> _Compiled | None:
        entries = self._entries
        if entries is None:
            with self._lock:
                if self._entries is None:
                    self._entries = self._load()
            entries = self._entries
        return entries.get(f"{flags}:{pattern}")

    def put(self, pattern: str, flags: int, needs: Needs | None, regex: re.Pattern[str] | None = None,
            code: list[int] | None = None) -> None:
        """Keep what parsing ``pattern`` (its needs alone: no ``regex``) or compiling it afresh gave (``code``: what
        the engine was given; None when ``re.compile`` compiled it), to be written when the process ends."""
        if self._path is None:
            return
        if regex is not None:
            if code is None:
                return
            entry = [regex.flags, code, regex.groups, dict(regex.groupindex), needs]
        else:
            entry = [flags, None, 0, {}, needs]
        key = f"{flags}:{pattern}"
        with self._lock:
            if not self._new:
                atexit.register(self.save)
            if regex is not None or key not in self._new:  # needs alone never replace the compiled expression
                self._new[key] = entry

    def save(self) -> None:
        """Write the kept expressions, those read and those compiled since, to the cache (atomically)."""
        from simworld._world.events import write_atomic

        with self._lock:
            if not self._new or self._path is None:
                return
            kept = {k: [e.flags, e.code, e.groups, e.names, e.needs] for k, e in (self._entries or {}).items()}
            kept.update(self._new)
            self._new = {}
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self._path, orjson.dumps(kept))
        except OSError:
            pass  # a cache that cannot be written: the next process compiles afresh


_KEPT = _Kept()


def compile_pattern(pattern: str, flags: int = 0) -> Pattern:
    """``re.compile(pattern, flags)``, compiled at its first use, with what its matches need read off it."""
    return Pattern(pattern, flags)


def compile_expression(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, compiled at its first use and kept between processes as a :class:`Pattern` is,
    for an expression run as it is (at a position, with no filter): what it gives answers as the compiled expression
    does in every way but two. It is not a ``re.Pattern`` (``isinstance``), and it is not the object a match's
    ``.re`` is: tell which of two expressions matched by which call gave the match, never by ``match.re is ...``
    (``tests/test_patterns.py`` looks for such comparisons)."""
    return cast("re.Pattern[str]", _Expression(pattern, flags))


class _Expression:
    """An expression compiled when one of its attributes is first asked for. The attribute (``search``, ``match``,
    ...) is the compiled expression's own, found there once and then kept on this object, so that a call costs what
    a call of the compiled expression does."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._of = Pattern(pattern, flags)

    def __getattr__(self, name: str) -> Any:
        if name == "_of" or name.startswith("__"):  # copying and pickling look for these before __init__ has run
            raise AttributeError(name)
        value = getattr(self._of.regex, name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return repr(self._of.regex)


def _parse(pattern: str, flags: int) -> Any:
    """The expression's tree, as ``re.compile`` parses it first (None where this module does not read one). A
    malformed expression raises the ``re.error`` that ``re.compile`` raises, from the same parser."""
    if _sre is None or flags & re.DEBUG:
        return None
    return _sre_parse.parse(pattern, flags)


def _compiled(pattern: str, flags: int, tree: Any) -> tuple[re.Pattern[str], list[int] | None]:
    """``re.compile(pattern, flags)``, from the expression's ``tree`` when it was parsed already.

    ``re.compile`` is the parser, then the compiler of the parsed tree: the second is run here as it runs it
    (parsing is half of compiling, and reading the needs took the tree already). Anything unexpected (another
    interpreter's internals), or no tree, falls back to ``re.compile`` itself: slower, the same expression.
    """
    if tree is None:
        return re.compile(pattern, flags), None
    try:
        code: list[int] | None = _sre_compile._code(tree, flags)
        regex = _engine_compile(pattern, flags | tree.state.flags, code, tree.state.groups - 1, tree.state.groupdict)
    except Exception:  # noqa: BLE001 - another interpreter's compiler: let re do it all
        regex, code = re.compile(pattern, flags), None
    return regex, code


def _engine_compile(pattern: str, flags: int, code: list[int] | None, groups: int,
                    names: dict[str, int]) -> re.Pattern[str]:
    """The regular expression engine's object for compiled ``code`` (as ``re.compile`` makes it last), with
    ``groups`` capturing groups and ``names`` naming some of them."""
    index: list[str | None] = [None] * (groups + 1)
    for name, i in names.items():
        index[i] = name
    compiled: re.Pattern[str] = _sre_engine.compile(pattern, flags, code, groups, names, tuple(index))
    return compiled


def _required(tree: Any) -> Needs | None:
    """What every match of a parsed expression holds (lower case: see :func:`_plain`), or None when nothing is
    known."""
    try:
        found = _needs(tree)
    except Exception:  # noqa: BLE001 - a tree of a shape not read here: search unfiltered, as re would
        return None
    if found is None:
        return None
    # Each branch's sets with the likeliest to be missing first (the fewest strings, the longest shortest string: not
    # "the" or "a"), so that a text without a match is most often told so by the first set asked about.
    return tuple(tuple(sorted((tuple(sorted(_shortest(s))) for s in branch), key=_unlikeliest)) for branch in found)


def _unlikeliest(strings: tuple[str, ...]) -> tuple[int, int]:
    return len(strings), -min(map(len, strings), default=0)


def _shortest(strings: frozenset[str]) -> set[str]:
    """A string holding another of the set adds nothing: the shorter is found wherever the longer is."""
    kept: list[str] = []
    for s in sorted(strings, key=len):  # only a shorter string can be inside another
        if not any(t in s for t in kept):  # (one inside a dropped string is inside a kept one)
            kept.append(s)
    return set(kept)


_Sets = list[frozenset[str]]
#: The op of a run of plain literal characters read as one item (see :func:`_parts`): its av is the run, in lower case.
_WORD = "word"


def _parts(sequence: Any) -> list[tuple[Any, Any]]:
    """A parsed sequence's items, each run of plain literal characters (see :func:`_plain`) joined into one
    ``(_WORD, text)`` item, without the zero-width assertions (the characters either side of one are next to each
    other in the text). A pattern is mostly words: reading a word at once, not a character at a time, is what
    makes reading a pattern cheap next to parsing it."""
    parts: list[tuple[Any, Any]] = []
    word: list[int] = []
    literal, zero_width = _sre.LITERAL, (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT)
    for item in sequence.data if isinstance(sequence, _sre_parse.SubPattern) else sequence:
        op = item[0]
        if op is literal:
            code = item[1]
            if 32 <= code < 127 or _plain(code):
                word.append(code)
                continue
        elif op in zero_width:
            continue
        if word:
            parts.append((_WORD, "".join(map(chr, word)).lower()))
            word = []
        parts.append(item)
    if word:
        parts.append((_WORD, "".join(map(chr, word)).lower()))
    return parts


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

    for op, av in _parts(items):
        strings = _literal_strings(op, av)
        if strings is not None:
            grown = {r + s for r in run for s in strings}
            if len(grown) > _MAX_STRINGS:
                close()
                grown = set(strings)
            run = grown
            continue
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
    if op is _WORD:
        return {av}
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
    for op, av in _parts(items):
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
