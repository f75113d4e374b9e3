"""The outcome grader: did the episode end in an allowed outcome class?"""

from __future__ import annotations

from collections.abc import Sequence

from simworld.episode import Episode
from simworld.verdict import Check, Verdict


def allowed_outcomes(episode: Episode, allowed: Sequence[str]) -> Verdict:
    """Pass if the episode ended with a terminal tool whose outcome is in ``allowed``."""
    if episode.outcome is None:
        detail = f"no terminal outcome (stop reason {episode.stop_reason}); expected one of {list(allowed)}"
        return Verdict.from_checks([Check("outcome_allowed", False, detail)])
    ok = episode.outcome in allowed
    return Verdict.from_checks([Check("outcome_allowed", ok, f"outcome {episode.outcome!r}; allowed {list(allowed)}")])
