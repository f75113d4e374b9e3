"""The requires grader: counters and the stop reason within the scenario's bounds.

``{"steps": {"max": 12}, "denied_calls": {"max": 0}, "stop_reason": "terminal"}``: each
counter from the closed list may have a ``min`` and a ``max``; ``stop_reason`` is one
reason or a list of them. A scenario whose correct end state is "nothing changed" is
discriminated by its outcome and this block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simworld._grading.verdict import Check, Verdict


def requires(episode: Any, bounds: Mapping[str, Any]) -> Verdict:
    """Pass if every bounded counter is within its bounds and the stop reason is allowed.

    Args:
        episode: The sealed episode.
        bounds: Counter name to ``{"min": N, "max": M}``, and optionally ``stop_reason``.
    """
    checks = []
    for name, bound in bounds.items():
        if name == "stop_reason":
            allowed = bound if isinstance(bound, list) else [bound]
            checks.append(Check("requires:stop_reason", episode.stop_reason in allowed,
                                f"stop reason {episode.stop_reason!r}; allowed {allowed}"))
            continue
        value = episode.counters[name]
        lo, hi = bound.get("min"), bound.get("max")
        ok = (lo is None or value >= lo) and (hi is None or value <= hi)
        checks.append(Check(f"requires:{name}", ok, f"{name}={value}; bounds min={lo} max={hi}"))
    return Verdict.from_checks(checks)
