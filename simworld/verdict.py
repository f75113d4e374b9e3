"""What a grader returns: every check it ran, passed or not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

__all__ = ["Check", "Verdict"]


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
    """A grader's verdict: the conjunction of its checks."""

    checks: tuple[Check, ...]

    @classmethod
    def from_checks(cls, checks: Iterable[Check]) -> Verdict:
        """Build a verdict from the checks a grader ran (at least one)."""
        checks = tuple(checks)
        if not checks:
            raise ValueError("A verdict needs at least one check; a grader that checked nothing cannot pass.")
        return cls(checks)

    @property
    def passed(self) -> bool:
        """True only if every check passed."""
        return all(c.passed for c in self.checks)
