"""The end-state grader: the agent's end state against the end state of every valid solution."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simworld._grading.projection import compare, projected_size, same_records, touched
from simworld._grading.verdict import Check, Verdict
from simworld._world.state import State


def expected_final_state(episode: Any, solutions: Sequence[State]) -> Verdict:
    """Pass if the business end state equals that of any valid solution on the canonical projection.

    States are compared on natural keys (an instalment by its plan and seq, a payment by
    its plan and position), over every record the episode or a solution touched. The
    reported ``state_diff`` is against the closest valid answer; partial credit is the
    share of compared fields that match it. Solutions that differ only in what they read end in
    the same records: the episode is compared with the first of those only.

    Args:
        episode: The sealed episode.
        solutions: The end states of every valid solution at this seed (supplied by the harness).
    """
    if not solutions:
        return Verdict.from_checks([Check("end_state_matches_a_solution", False, "no valid end state to compare")],
                                   state_diff=[], score=0.0)
    final = episode.final_state
    mine = touched([episode.initial_state, final])
    diffs: list[tuple[list[dict[str, Any]], frozenset[tuple[str, str]], int]] = []
    compared: list[tuple[set[tuple[str, str]], State]] = []  # each solution read so far: its keys and end state
    # In order, stopping at the first match: a later solution is never read (nor, in a run, played). Records that
    # neither this episode nor solution i touched are the start's in both, so they cannot tell the two apart.
    for i, solution in enumerate(solutions):
        theirs = touched([solution])
        twin = _twin(compared, theirs, solution)
        compared.append((theirs, solution))
        if twin is not None:  # an earlier solution's end state again (they differ in reads): its difference again
            diffs.append(diffs[twin])
            continue
        keys = frozenset(mine | theirs)
        # The same records: the same projection, found without projecting (else only the records that differ are).
        d, size = ([], 0) if same_records(solution, final, keys) else compare(solution, final, keys)
        if not d:
            return Verdict.from_checks([Check("end_state_matches_a_solution", True, f"matches solution {i}")],
                                       state_diff=[], score=1.0)
        diffs.append((d, keys, size))
    # None matches: the closest valid answer, its share of matching fields taken over every record any touched.
    index = min(range(len(diffs)), key=lambda i: len(diffs[i][0]))
    d, keys, size = diffs[index]
    every = mine.union(*(k for _, k, _ in diffs))
    if every != keys:
        size = projected_size(solutions[index], every)
    n = len(d)
    detail = (f"{n} field(s) differ from the closest valid end state (solution {index}): "
              + ", ".join(x["path"] for x in d[:5]) + (" ..." if n > 5 else ""))
    return Verdict.from_checks([Check("end_state_matches_a_solution", False, detail)], state_diff=d,
                               score=max(0.0, 1 - n / max(size, 1)))


def _twin(compared: Sequence[tuple[set[tuple[str, str]], State]], keys: set[tuple[str, str]],
          solution: State) -> int | None:
    """The index of the first solution in ``compared`` whose end state holds the same records as ``solution``,
    byte for byte, under the same keys (``keys``: what ``solution`` touched), or None.

    Such a solution was compared with the episode over the same keys and the same records, so it differed
    from the episode as ``solution`` does: had it matched, grading would have stopped there.
    """
    for index, (theirs, state) in enumerate(compared):
        if theirs == keys and same_records(state, solution, keys):
            return index
    return None
