"""Replay: rebuild a world from its seed's snapshot by re-applying the recorded effects.

Only calls that could change the state (WRITE and TERMINAL calls that returned
ok) are re-applied, each at its recorded simulated time. Every re-applied call
must return the recorded result, and the rebuilt state must hash to the recorded
final state hash; anything else is a :class:`~simworld.errors.ReplayError` that
says where the two diverged.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from simworld.clock import SimClock, parse_instant
from simworld.errors import ReplayError
from simworld.events import read_events
from simworld.scenario import Scenario
from simworld.tools import TOOLS
from simworld.world import World

__all__ = ["ReplayReport", "replay"]


@attrs.frozen
class ReplayReport:
    """What a replay rebuilt and confirmed."""

    scenario: str
    seed: int
    applied: int
    final_state_hash: str


def replay(path: Path, scenarios: dict[str, Scenario]) -> ReplayReport:
    """Rebuild the world recorded in ``path`` and confirm its final state hash."""
    log = read_events(path)
    sid, seed = log.header.get("scenario"), log.header.get("seed")
    if sid not in scenarios:
        raise ReplayError(f"{path.name}: scenario {sid!r} is not in the suite; pass --suite DIR that holds it.")
    scenario = scenarios[sid]
    inst = scenario.instance(int(seed))  # type: ignore[arg-type]
    if inst.state.hash != log.header.get("initial_state_hash"):
        raise ReplayError(f"{path.name}: the seed's initial state hashes to {inst.state.hash}, not the recorded "
                          f"{log.header.get('initial_state_hash')}; the scenario or its snapshot changed.")
    world = World(inst.state, SimClock(inst.clock), scenario.snapshot.policy, dict(TOOLS))
    applied = 0
    for event in log.events:
        if event.status != "ok" or event.kind not in ("write", "terminal"):
            continue
        world.seq = event.seq
        world.clock.set(parse_instant(event.at))
        again = world.call(event.tool, event.args)
        if again.status != "ok" or again.result != event.result:
            raise ReplayError(f"{path.name}: event seq={event.seq} ({event.tool}) replays to {again.status} "
                              f"{again.result!r}, not the recorded {event.result!r}.")
        applied += 1
    final = log.footer.get("final_state_hash")
    if world.state.hash != final:
        raise ReplayError(f"{path.name}: replayed state hashes to {world.state.hash}, not the recorded {final}.")
    return ReplayReport(sid, int(seed), applied, world.state.hash)  # type: ignore[arg-type]
