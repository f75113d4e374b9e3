"""The outcome grader: did the episode end in an allowed outcome class?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simworld._grading.verdict import Check, Verdict


def allowed_outcomes(episode: Any, allowed: Sequence[str]) -> Verdict:
    """Pass if the episode ended with a terminal tool whose outcome class is in ``allowed``.

    Args:
        episode: The sealed episode.
        allowed: The outcome classes that are correct for this scenario.
    """
    if episode.outcome is None:
        detail = f"no terminal outcome (stop reason {episode.stop_reason}); expected one of {list(allowed)}"
        return Verdict.from_checks([Check("outcome_allowed", False, detail)], outcome_class_correct=False)
    ok = episode.outcome in allowed
    detail = f"outcome {episode.outcome!r}; allowed {list(allowed)}"
    return Verdict.from_checks([Check("outcome_allowed", ok, detail)], outcome_class_correct=ok)
