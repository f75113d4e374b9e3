"""Kept tool calls: a call made again on the same state, time and sequence number takes the kept effect and
result; the episode it gives is byte for byte the one that running the tool gives."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
import orjson
import pytest

from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.judge import _play_solutions
from simworld._episode.play import play
from simworld._episode.steps import steps_factory
from simworld._running.job import event_file_content
from simworld._scenario.scenario import Scenario, load_suite
from simworld._world import tools
from simworld._world.clock import SimClock, TimeGuard
from simworld._world.dates import local_date
from simworld._world.world import World
from simworld.errors import ToolArgumentError

SMALL_FEE_SEED = 3  # a fee the desk may waive


def _fresh(scenario: Scenario) -> Scenario:
    """A copy with a start of its own (the kept calls live on a scenario's start at a seed)."""
    return attrs.evolve(scenario)


def _episode_bytes(scenario: Scenario, seed: int, agent: str, guard: TimeGuard) -> bytes:
    episode = play(Environment(scenario, seed, agent_name=agent, guard=guard), build_agent_factory(agent))
    return event_file_content(scenario, episode)


@pytest.mark.parametrize("agent", ["reference", "random"])
def test_a_call_made_again_gives_the_episode_running_it_gives(agent: str) -> None:
    """Over the whole suite: the first play runs every tool, the second takes every call from what was kept,
    and the two event files (results, states' hashes, outcome) are the same bytes."""
    hits = 0
    with TimeGuard() as guard:
        for scenario in load_suite():
            sc = _fresh(scenario)
            first = _episode_bytes(sc, 11, agent, guard)
            kept = dict(sc.instance(11).calls)
            second = _episode_bytes(sc, 11, agent, guard)
            assert second == first, sc.id
            assert sc.instance(11).calls == kept, "the second play made no call the first had not"
            hits += len(kept)
    assert hits > 50


def test_solutions_take_the_agents_calls_and_end_where_running_them_ends() -> None:
    """The reference agent plays the first solution: replaying it after the agent adds no kept call, and every
    solution's end state is the one it reaches with nothing kept."""
    with TimeGuard() as guard:
        for scenario in load_suite():
            cold = _play_solutions(_fresh(scenario), 12, guard)
            sc = _fresh(scenario)
            _episode_bytes(sc, 12, "reference", guard)
            after_agent = len(sc.instance(12).calls)
            warm = _play_solutions(sc, 12, guard)
            assert [s.hash for s in warm] == [s.hash for s in cold], sc.id
            if len(sc.solutions) == 1:
                assert len(sc.instance(12).calls) == after_agent, sc.id


def test_a_kept_result_is_a_fresh_copy_every_time() -> None:
    """An agent that mutates the result it was handed changes neither what was kept nor another episode."""
    (scenario,) = load_suite(None, ["split-balance-three-ways"])
    sc = _fresh(scenario)
    with TimeGuard() as guard:
        first = play(Environment(sc, 3, agent_name="reference", guard=guard), build_agent_factory("reference"))
        second = play(Environment(sc, 3, agent_name="reference", guard=guard), build_agent_factory("reference"))
        for event in (*first.events, *second.events):
            if isinstance(event.result, dict):
                event.result["tampered"] = True
        third = play(Environment(sc, 3, agent_name="reference", guard=guard), build_agent_factory("reference"))
    assert second.events[0].result is not first.events[0].result
    assert all("tampered" not in e.result for e in third.events if isinstance(e.result, dict))


def test_a_tool_swapped_for_another_is_run_not_taken_from_what_was_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept calls belong to the tool that made them: a tool replaced (a user's own, a test's) runs afresh."""
    (scenario,) = load_suite(None, ["waive-small-fee"])
    sc = _fresh(scenario)
    with TimeGuard() as guard:
        before = play(Environment(sc, 4, agent_name="reference", guard=guard), build_agent_factory("reference"))
        real = tools.TOOLS["waive_fee"]

        def refusing(world: Any, **kwargs: Any) -> dict[str, Any]:
            raise ToolArgumentError("waive_fee: refused by the replacement")

        monkeypatch.setitem(tools.TOOLS, "waive_fee", attrs.evolve(real, fn=refusing))
        after = play(Environment(sc, 4, agent_name="reference", guard=guard), build_agent_factory("reference"))
    waived = [e for e in before.events if e.tool == "waive_fee"]
    refused = [e for e in after.events if e.tool == "waive_fee"]
    assert waived and waived[0].status == "ok"
    assert refused and refused[0].status == "error" and "replacement" in refused[0].result["error"]


# -- a call that read neither the clock nor the sequence number is kept for any instant ----------------------

def _timeless_calls_moved(scenario: Scenario, seed: int, agent: str, guard: TimeGuard) -> tuple[int, list[str]]:
    """Play ``agent`` and every solution of ``scenario`` at ``seed``; run each call kept for any instant again,
    with nothing kept, days later and with another sequence number: how many were checked, and each one whose
    status, result or end state moved."""
    sc = _fresh(scenario)
    play(Environment(sc, seed, agent_name=agent, guard=guard), build_agent_factory(agent))
    _play_solutions(sc, seed, guard)
    inst = sc.instance(seed)
    checked, moved = 0, []
    for key, (before, tool, after, result, status) in list(inst.calls.items()):
        if len(key) != 3:  # kept for its instant and number only
            continue
        checked += 1
        later = SimClock(inst.clock + timedelta(days=3, hours=7))
        world = World(before, later, sc.snapshot.policy, {tool.name: tool})
        world.seq = 17
        event = world.call(tool.name, orjson.loads(key[2]))
        if (event.status, orjson.dumps(event.result), world.state.hash) != (status, result, after.hash):
            moved.append(f"{sc.id} seed {seed} {agent}: {tool.name}({key[2].decode()})")
    return checked, moved


@pytest.mark.parametrize("agent", ["reference", "random"])
def test_a_call_kept_for_any_instant_has_the_same_effect_at_another(agent: str) -> None:
    """Over the whole suite, the agent's calls and every solution's: a call kept whatever the instant and the
    sequence number (it read neither while it ran) has the same status, result and end state days later
    under another number. Solutions that differ only in the reads before a write share that write."""
    checked, moved = 0, []
    with TimeGuard() as guard:
        for scenario in load_suite():
            for seed in (3, 8):
                n, found = _timeless_calls_moved(scenario, seed, agent, guard)
                checked += n
                moved += found
    assert not moved, moved[:5]
    assert checked > 200


def test_a_tool_reading_the_instant_behind_the_worlds_back_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: were ``World.today`` to read the clock without the world seeing it,
    waiving a fee (which dates the waiver today) would be kept for any instant, and moved."""
    monkeypatch.setattr(World, "today", lambda self, customer_id=None: local_date(self._clock.now, "UTC"))
    (scenario,) = load_suite(None, ["waive-small-fee"])
    with TimeGuard() as guard:
        checked, moved = _timeless_calls_moved(scenario, SMALL_FEE_SEED, "reference", guard)
    assert checked and any("waive_fee" in m for m in moved), moved


# -- a solution whose calls the agent made is not played again -------------------------------------------------

def _reference(sc: Scenario, seed: int, guard: TimeGuard) -> Any:
    return play(Environment(sc, seed, agent_name="reference", guard=guard), build_agent_factory("reference"))


def test_a_solution_the_agent_played_call_for_call_ends_where_playing_it_ends() -> None:
    """Over the whole suite: the first solution (the reference agent's calls) is taken from the episode and
    every solution's end state is the one played with no episode given; a recovery scenario plays them all."""
    from simworld._episode.judge import made_the_calls_of

    taken = 0
    with TimeGuard() as guard:
        for scenario in load_suite():
            for seed in (0, 9):
                played = _play_solutions(_fresh(scenario), seed, guard)
                sc = _fresh(scenario)
                episode = _reference(sc, seed, guard)
                matched = made_the_calls_of(episode, sc, sc.solutions[0])
                assert matched == (sc.recovery is None), sc.id
                shortcut = _play_solutions(sc, seed, guard, episode)
                assert [s.hash for s in shortcut] == [s.hash for s in played], (sc.id, seed)
                if matched:
                    assert shortcut[0] is episode.final_state
                    taken += 1
    assert taken > 40


@pytest.mark.parametrize("agent", ["random", "drift:float", "drift:add-month", "noop"])
def test_an_agent_whose_calls_differ_has_every_solution_played(agent: str) -> None:
    """An episode that is not a solution's calls, byte for byte, spares nothing (drift agents differ by a cent
    or a day in one argument)."""
    from simworld._episode.judge import made_the_calls_of

    with TimeGuard() as guard:
        for scenario in load_suite():
            episode = play(Environment(scenario, 5, agent_name=agent, guard=guard), build_agent_factory(agent))
            for name, steps in zip(scenario.solution_files, scenario.solutions, strict=True):
                if made_the_calls_of(episode, scenario, steps):
                    # only when the agent's calls really are the solution's, argument bytes and all
                    assert [(e.tool, e.args) for e in episode.events] == [
                        (e.tool, e.args) for e in play(Environment(scenario, 5, agent_name="x", guard=guard),
                                                       steps_factory(steps, name)).events], (agent, name)


def test_a_broken_solution_is_named_even_when_the_agent_played_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sparing the solution the agent played never hides another one that does not play at this seed."""
    from simworld._episode.judge import made_the_calls_of
    from simworld.errors import BrokenSolutionError

    scenario = next(s for s in load_suite() if len(s.solutions) > 1 and s.recovery is None)
    sc = _fresh(scenario)
    with TimeGuard() as guard:
        episode = _reference(sc, 2, guard)
        assert made_the_calls_of(episode, sc, sc.solutions[0])
        broken = list(sc.solutions)
        broken[1] = broken[1][:1]  # the second solution cut after its first call: no terminal tool
        sc2 = attrs.evolve(sc, solutions=tuple(broken))
        episode2 = _reference(sc2, 2, guard)
        with pytest.raises(BrokenSolutionError, match=sc2.solution_files[1]):
            _play_solutions(sc2, 2, guard, episode2)


@pytest.mark.parametrize("args", [
    {"plan_id": "pln_001", "count": 3},
    {"plan_id": "pln_001", "count": 4},
    {"count": 3, "plan_id": "pln_001"},
    {"amount": 2 ** 70},
    {"amount": -(2 ** 63)},
    {"text": "caf\u00e9 \ud800"},
    {"nested": [{"a": [1, 2, None, True]}]},
])
def test_a_step_s_arguments_are_the_recorded_ones_as_their_plain_copy_s_bytes(args: dict[str, Any]) -> None:
    """The quick comparison of a step's exact JSON arguments answers as the plain copy's bytes do, and a value that
    has no such bytes (an integer past 64 bits, a lone surrogate) is read by the careful copy, never taken as equal."""
    from simworld._episode.judge import _same_args
    from simworld._world.actions import plain_value

    recorded = {"plan_id": "pln_001", "count": 3}
    for exact in (True, False):
        plain, problem = plain_value(args, "args")
        expected = problem is None and orjson.dumps(plain) == orjson.dumps(recorded)
        assert _same_args(args, recorded, exact) is expected, (args, exact)
        assert _same_args(args, plain, exact) is (problem is None), (args, exact)
