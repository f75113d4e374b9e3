"""The outcome grader: did the episode end in an allowed outcome class?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simworld._grading.verdict import Check, Verdict

#: Verdicts by (outcome, stop reason, allowed classes): each is a value (Verdict is immutable) that depends on
#: nothing else, and a suite ends in few distinct ways, so each is made once per process.
_MADE: dict[tuple[Any, ...], Verdict] = {}
_MADE_SIZE = 1024


def allowed_outcomes(episode: Any, allowed: Sequence[str]) -> Verdict:
    """Pass if the episode ended with a terminal tool whose outcome class is in ``allowed``.

    Args:
        episode: The sealed episode.
        allowed: The outcome classes that are correct for this scenario.
    """
    outcome, stop = episode.outcome, episode.stop_reason
    key: tuple[Any, ...] | None = (type(outcome), outcome, type(stop), stop, *allowed)
    try:
        made = _MADE.get(key) if key is not None else None
    except TypeError:  # something unhashable: judge it without keeping the verdict
        key, made = None, None
    if made is not None:
        return made
    if episode.outcome is None:
        detail = f"no terminal outcome (stop reason {episode.stop_reason}); expected one of {list(allowed)}"
        made = Verdict.from_checks([Check("outcome_allowed", False, detail)], outcome_class_correct=False)
    else:
        ok = episode.outcome in allowed
        detail = f"outcome {episode.outcome!r}; allowed {list(allowed)}"
        made = Verdict.from_checks([Check("outcome_allowed", ok, detail)], outcome_class_correct=ok)
    if key is not None:
        if len(_MADE) >= _MADE_SIZE:
            _MADE.clear()
        _MADE[key] = made
    return made
