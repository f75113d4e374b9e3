"""The end-state grader: the agent's end state against the end state of every valid solution."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simworld._grading.projection import Projection, diff, project, same_records, touched
from simworld._grading.verdict import Check, Verdict
from simworld._world.state import State


def expected_final_state(episode: Any, solutions: Sequence[State]) -> Verdict:
    """Pass if the business end state equals that of any valid solution on the canonical projection.

    States are compared on natural keys (an instalment by its plan and seq, a payment by
    its plan and position), over every record the episode or a solution touched. The
    reported ``state_diff`` is against the closest valid answer; partial credit is the
    share of compared fields that match it.

    Args:
        episode: The sealed episode.
        solutions: The end states of every valid solution at this seed (supplied by the harness).
    """
    if not solutions:
        return Verdict.from_checks([Check("end_state_matches_a_solution", False, "no valid end state to compare")],
                                   state_diff=[], score=0.0)
    keys = touched([episode.initial_state, episode.final_state, *solutions])
    actual: Projection | None = None
    best: tuple[int, int, list[dict[str, Any]], int] | None = None
    for i, solution in enumerate(solutions):
        if best is not None and best[0] == 0:
            break  # the first valid answer matched; no later one can be closer
        if same_records(solution, episode.final_state, keys):
            best = (0, i, [], 1)  # the same records: the same projection, found without projecting
            break
        if actual is None:
            actual = project(episode.final_state, keys)
        expected = project(solution, keys)
        d = diff(expected, actual)
        if best is None or len(d) < best[0]:
            best = (len(d), i, d, max(len(expected), 1))
    assert best is not None
    n, index, d, size = best
    ok = n == 0
    detail = f"matches solution {index}" if ok else (
        f"{n} field(s) differ from the closest valid end state (solution {index}): "
        + ", ".join(x["path"] for x in d[:5]) + (" ..." if n > 5 else ""))
    return Verdict.from_checks([Check("end_state_matches_a_solution", ok, detail)], state_diff=d,
                               score=max(0.0, 1 - n / size))
