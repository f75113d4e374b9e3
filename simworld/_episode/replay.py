"""Replay and re-grading: rebuild an episode from its event log, without the agent.

Only calls that could change the state (WRITE and TERMINAL calls that returned ok) are
re-applied, each at its recorded simulated time, and each must return the recorded
result. The rebuilt episode has the same initial state, states after each event,
final state, outcome and counters as the one recorded, so graders (new or old) can
judge it again: ``simworld grade RUN_DIR``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

from simworld._episode.episode import Crash, Episode
from simworld._scenario.scenario import Scenario
from simworld._world.clock import SimClock, parse_instant
from simworld._world.events import Event, EventFile, read_events
from simworld._world.tools import TOOLS
from simworld._world.world import World
from simworld.errors import ReplayError

__all__ = ["ReplayReport", "rebuild", "replay"]


@attrs.frozen
class ReplayReport:
    """What a replay rebuilt and confirmed."""

    scenario: str
    seed: int
    applied: int
    final_state_hash: str


def _scenario(path: Path, log: EventFile, scenarios: Mapping[str, Scenario]) -> Scenario:
    sid = log.header.get("scenario")
    if sid not in scenarios:
        raise ReplayError(f"{path.name}: scenario {sid!r} is not in the suite; pass --suite DIR that holds it.")
    return scenarios[sid]  # type: ignore[index]


def rebuild(path: Path, scenarios: Mapping[str, Scenario], log: EventFile | None = None) -> tuple[Episode, int]:
    """Rebuild the episode recorded in ``path``; return it and the number of calls re-applied."""
    log = log or read_events(path)
    scenario = _scenario(path, log, scenarios)
    seed = log.header.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ReplayError(f"{path.name}: the header's seed is {seed!r}; an event file written by simworld run has a "
                          "seed >= 0 (was the file edited?).")
    inst = scenario.instance(seed)
    if inst.state.hash != log.header.get("initial_state_hash"):
        raise ReplayError(f"{path.name}: the seed's initial state hashes to {inst.state.hash}, not the recorded "
                          f"{log.header.get('initial_state_hash')}; the scenario or its snapshot changed.")
    world = World(inst.state, SimClock(inst.clock), scenario.snapshot.policy, dict(TOOLS))
    states = []
    applied = 0
    outcome = None
    crash = None
    if log.crash is not None:
        c = log.crash
        crash = Crash(int(c["at_call"]), bool(c["after_side_effect"]), int(c["position"]), c.get("lost"))

    events: list[Event] = []

    def apply(event: Event) -> None:
        nonlocal applied, outcome
        world.seq = event.seq
        world.clock.set(parse_instant(event.at))
        again = world.call(event.tool, event.args)
        if again.status != event.status or again.result != event.result:
            raise ReplayError(f"{path.name}: event seq={event.seq} ({event.tool}) replays to {again.status} "
                              f"{again.result!r}, not the recorded {event.result!r}.")
        applied += 1
        if event.kind == "terminal" and event.status == "ok":
            outcome = event.result.get("outcome")
        if event.kind == "read" or event.status != "ok":
            applied -= 1  # "applied" counts the writes that changed something, as before

    for i, event in enumerate((*log.events, None)):
        if crash is not None and crash.position == i and crash.lost is not None:
            apply(crash.lost)  # the call whose effect landed though the session log lost it
            events.append(crash.lost)
            states.append(world.state)
        if event is None:
            break
        if event.kind in ("read", "write", "terminal"):
            apply(event)  # reads too: an edited read result is caught, not "confirmed"
        events.append(event)
        states.append(world.state)
    footer = log.footer
    counters: dict[str, Any] = footer.get("counters") or {}
    episode = Episode(scenario.id, seed, str(log.header.get("agent", "?")), scenario.request(inst.vars),
                      scenario.snapshot.policy.render(inst.vars["currency"]), MappingProxyType(dict(inst.vars)),
                      inst.state, world.state, tuple(states), tuple(events), outcome,
                      footer.get("stop_reason", "agent_stopped"), MappingProxyType(counters), footer.get("error"),
                      scenario.snapshot.policy, MappingProxyType(dict(scenario.target)), crash, scenario.tools)
    return episode, applied


def replay(path: Path, scenarios: Mapping[str, Scenario]) -> ReplayReport:
    """Rebuild the world recorded in ``path`` and confirm its final state hash."""
    log = read_events(path)
    episode, applied = rebuild(path, scenarios, log)
    final = log.footer.get("final_state_hash")
    if episode.final_state.hash != final:
        raise ReplayError(f"{path.name}: replayed state hashes to {episode.final_state.hash}, not the recorded "
                          f"{final}.")
    return ReplayReport(episode.scenario, episode.seed, applied, episode.final_state.hash)
