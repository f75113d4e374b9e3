"""Patterns that look for their words before they run: what the text graders search a clause with.

Most clauses hold none of the words most patterns are about (a clause about a due day names no fee,
no refund, no premium), and a regular expression with ``.{0,60}?`` gaps costs far more to run than a
substring test. :class:`Pattern` reads, once, from the compiled expression itself, a few strings one
of which every match must contain (``fee``, ``charge``, ``penalt`` for the fee topic); a text that
holds none of them (compared in lower case) cannot match, and the expression is not run. Only
``search``, ``sub``, ``split`` and ``finditer`` are offered, each answering exactly as the
expression's own method: the strings are derived from the expression, never written beside it, so
the two cannot drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

# The expression parser of the standard library, the one ``re.compile`` uses: reading its tree is the only way
# to learn what a pattern needs without writing it down twice. Should it ever change shape, every pattern runs
# unfiltered (see ``_required``), which is slower and answers the same.
try:
    from re import _constants as _sre, _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - an interpreter without them: nothing is filtered
    _sre = _sre_parse = None

__all__ = ["FOLDS_TO_ASCII", "Pattern", "compile_pattern"]

#: The characters outside ASCII that an ASCII letter of a pattern matches when case is ignored (dotted and
#: dotless i, long s, the Kelvin sign), or whose lower case is two characters (dotted capital I): a text holding
#: one is searched unfiltered, since its lower case is not what the expression compares.
FOLDS_TO_ASCII = frozenset("\u0130\u0131\u017f\u212a")

#: A set of literal alternatives is kept while it has at most this many strings (``(?:a|b)(?:c|d)``: 4).
_MAX_STRINGS = 32


class Pattern:
    """A compiled expression and the strings one of which every match holds (lower case; None: no such strings).

    Args:
        regex: The compiled expression.
    """

    __slots__ = ("needs", "regex")

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex = regex
        self.needs: tuple[str, ...] | None = _required(regex)

    def __repr__(self) -> str:
        return f"Pattern({self.regex.pattern!r}, needs={self.needs!r})"

    def may_match(self, text: str) -> bool:
        """False only when no match of the expression can be in ``text``."""
        needs = self.needs
        if needs is None:
            return True
        if not text.isascii() and not FOLDS_TO_ASCII.isdisjoint(text):
            return True
        return any(map(text.lower().__contains__, needs))

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


def compile_pattern(pattern: str, flags: int = 0) -> Pattern:
    """``re.compile(pattern, flags)``, with the strings its matches need read off it."""
    return Pattern(re.compile(pattern, flags))


def _required(regex: re.Pattern[str]) -> tuple[str, ...] | None:
    """Strings (lower case, ASCII) one of which every match of ``regex`` contains, or None when none are known."""
    if _sre is None:
        return None
    try:
        tree = _sre_parse.parse(regex.pattern, regex.flags)
        found = _needs(tree)
    except Exception:  # noqa: BLE001 - a tree of a shape not read here: search unfiltered, as re would
        return None
    if not found:
        return None
    # a string holding another of the set adds nothing: the shorter is found wherever the longer is
    return tuple(sorted(s for s in found if not any(t != s and t in s for t in found)))


def _needs(items: Any) -> frozenset[str] | None:
    """What a sequence of parsed items needs: the most selective of the needs of its parts (see :func:`_score`).

    A run of literal characters (with zero-width assertions inside it, and small classes of literal
    characters multiplying it out) needs itself; an alternation needs one of what each branch needs; a
    group needs what its contents need; a repeat at least once needs what its body needs; anything else
    needs nothing of its own.
    """
    candidates: list[frozenset[str]] = []
    run: set[str] = {""}

    def close() -> None:
        nonlocal run
        if run != {""}:
            candidates.append(frozenset(run))
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
        need: frozenset[str] | None = None
        if op is _sre.SUBPATTERN:
            need = _needs(av[-1])
        elif op is _sre.ATOMIC_GROUP:
            need = _needs(av)
        elif op is _sre.BRANCH:
            branches = [_needs(b) for b in av[1]]
            if all(b is not None for b in branches):
                need = frozenset().union(*branches)  # type: ignore[arg-type]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            need = _needs(av[2])
        if need:
            candidates.append(need)
    close()
    return max(candidates, key=_score, default=None)


def _literal_strings(op: Any, av: Any) -> set[str] | None:
    """The strings (lower case, printable ASCII) one parsed item matches, when it matches only a few fixed strings
    (a literal, a class of literals, a group or an alternation of runs of them); else None."""
    if op is _sre.LITERAL:
        return {chr(av).lower()} if 32 <= av < 127 else None
    if op is _sre.IN:
        if len(av) > 8 or not all(o is _sre.LITERAL and 32 <= a < 127 for o, a in av):
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


def _score(need: frozenset[str]) -> tuple[int, int]:
    """Longer shortest strings first (a longer string is rarer), then fewer strings (fewer tests)."""
    return min(len(s) for s in need), -len(need)
