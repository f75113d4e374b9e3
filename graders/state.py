"""The end-state grader: does the business state match the end state of a valid solution?"""

from __future__ import annotations

from collections.abc import Sequence

from simworld.episode import Episode
from simworld.verdict import Check, Verdict


def expected_final_state(episode: Episode, expected: Sequence[str]) -> Verdict:
    """Pass if the final business-state hash equals that of any valid solution's end state.

    Args:
        episode: The sealed episode.
        expected: Business-state hashes of every valid solution's end state for this seed.
    """
    actual = episode.final_state.business_hash
    initial, final = episode.initial_state, episode.final_state
    changed = [f"{t}/{i}" for t, i in final.changed() if initial.get(t, i) != final.get(t, i)]
    ok = actual in expected
    detail = f"matches solution {list(expected).index(actual)}" if ok else (
        f"business state {actual[:12]} matches none of {len(expected)} valid end state(s); records touched: "
        f"{changed or 'none'}")
    return Verdict.from_checks([Check("end_state_matches_a_solution", ok, detail)])
