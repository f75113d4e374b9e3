"""What a grader returns: every check it ran, passed or not, and what it found."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

__all__ = ["Check", "Verdict"]

_PASSED = operator.attrgetter("passed")


@attrs.frozen
class Check:
    """One named check with its result and a detail a human can act on."""

    name: str
    passed: bool
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """The check as JSON values."""
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@attrs.frozen
class Verdict:
    """A grader's verdict: the conjunction of its checks, plus structured findings.

    ``data`` carries what the result JSON reports beside the checks (a built-in grader
    puts ``state_diff``, ``step_scores``, ``order_violations``, ``forbidden_changes`` or
    ``unauthorised_actions`` there); ``score``, when given, is the grader's partial
    credit in [0, 1], otherwise the share of its checks that passed.
    """

    checks: tuple[Check, ...]
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=lambda d: MappingProxyType(dict(d)))
    score: float | None = None

    @classmethod
    def from_checks(cls, checks: Iterable[Check], *, score: float | None = None, **data: Any) -> Verdict:
        """Build a verdict from the checks a grader ran (at least one); keyword arguments become ``data``."""
        checks = tuple(checks)
        if not checks:
            raise ValueError("A verdict needs at least one check; a grader that checked nothing cannot pass.")
        for c in checks:
            if not isinstance(c, Check):
                raise TypeError(f"Expected Check objects but got {c!r} (type={type(c).__name__}).")
        if score is not None and not 0.0 <= score <= 1.0:
            raise ValueError(f"Expected score in [0, 1] but got score={score!r}.")
        return cls(checks, data, score)

    @property
    def passed(self) -> bool:
        """True only if every check passed."""
        return all(map(_PASSED, self.checks))

    @property
    def partial(self) -> float:
        """Partial credit in [0, 1]: ``score`` if the grader set one, else the share of checks passed."""
        if self.score is not None:
            return self.score
        return sum(map(_PASSED, self.checks)) / len(self.checks)
