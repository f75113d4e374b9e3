"""The money-invariants grader: in whatever end state the agent left, the money still adds up.

Checked on every plan the episode changed, so drift is caught even where no exact
expectation was written:

- ``conservation``: the plan's non-cancelled instalments, less the credit its schedules
  granted (a negative credit is credit used), sum to their initial total plus the
  pro-rata change of every premium change recorded in the episode (days remaining over
  the days of the actual term, rounded once); a credit is granted only when nothing is
  left unpaid (a decrease beyond the balance);
- ``whole_minor_units``: every amount is in the plan's currency (whole minor units by
  construction);
- ``no_negative_amounts``: no negative amount and no zero instalment still owed;
- ``even_split``: where the unpaid instalments were replaced by a schedule with the same
  total (a re-split), every part is ⌊B/N⌋ or ⌈B/N⌉, the larger ones together at the start or
  the end (at the plan's end if it names one);
- ``schedule_order``: seq contiguous from 1, due dates strictly increasing, all within the term;
- ``paid_unchanged``: paid instalments unchanged, partially paid ones changed only by payment;
- ``status_transitions``: statuses moved only along allowed transitions.
"""

from __future__ import annotations

from typing import Any

from simworld._grading.invariants import check_episode, even_split_problem
from simworld._grading.verdict import Check, Verdict

__all__ = ["even_split_problem", "money_invariants"]

# Invariant (simworld._grading.invariants) -> the name of this grader's check.
_CHECKS = {"conservation": "conservation", "whole_minor_units": "whole_minor_units",
           "no_negative": "no_negative_amounts", "even_split": "even_split", "schedule_order": "schedule_order",
           "paid_unchanged": "paid_unchanged", "transitions": "status_transitions"}


#: The verdict of an episode whose changed plans keep every invariant, by how many plans it changed: a value
#: (Verdict is immutable) that does not depend on the episode otherwise, so it is made once per count.
_HOLDING: dict[int, Verdict] = {}


def money_invariants(episode: Any, even_split: bool = True) -> Verdict:
    """Pass if every changed plan keeps the money invariants (see :mod:`simworld._grading.invariants`).

    Args:
        episode: The sealed episode.
        even_split: Whether a re-split must be an even split (turn off for plans with uneven schedules).
    """
    found = check_episode(episode, even_split=even_split, only=_CHECKS)
    initial, final = episode.initial_state, episode.final_state
    n = len({rid for (t, rid), record in final.overlay.items() if t == "plans" and record is not initial.get(t, rid)})
    if not found:  # the common case: the same verdict for every episode that changed n plans
        holding = _HOLDING.get(n)
        if holding is None:
            holding = _HOLDING[n] = Verdict.from_checks([Check(name, True, f"holds on {n} changed plan(s)")
                                                         for name in _CHECKS.values()])
        return holding
    hits: dict[str, list[str]] = {invariant: [] for invariant in _CHECKS}
    for v in found:
        hits[v.invariant].append(f"{v.where}: {v.detail}")
    holds = f"holds on {n} changed plan(s)"
    return Verdict.from_checks([Check(name, not hits[inv], "; ".join(hits[inv]) if hits[inv] else holds)
                                for inv, name in _CHECKS.items()])
