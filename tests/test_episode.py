"""The episode loop: how episodes end, what the agent sees, and what is sealed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simworld import make
from simworld._agents.kinds import NoopAgent
from simworld._episode.environment import Environment
from simworld._episode.episode import Observation
from simworld._episode.play import play
from simworld._episode.steps import StepsAgent
from simworld._scenario.scenario import load_suite
from simworld._world.clock import TimeGuard, wall_monotonic
from simworld._world.vocab import COUNTERS

SID = "split-balance-three-ways"


@pytest.fixture(scope="module")
def scenario():
    (sc,) = load_suite(None, [SID])
    return sc


def _play(scenario, agent, seed=0, guard=None):
    return play(Environment(scenario, seed, agent_name="test", guard=guard), lambda sc, s, v: agent)


class _Fn:
    def __init__(self, fn):
        self.fn = fn

    def act(self, obs: Observation) -> Any:
        return self.fn(obs)


class TestObservation:
    def test_first_observation_has_request_policy_tools(self, scenario) -> None:
        """The agent first sees the rendered request, the policy text and every tool's schema."""
        obs = make(scenario, 5).reset()
        assert "{" not in obs.request and "3 payments" in obs.request
        assert "paid_immutable" in obs.policy and "Amounts are in" in obs.policy
        names = [t["name"] for t in obs.tools]
        assert "set_schedule" in names and "finish" in names
        assert obs.step == 0 and obs.last_result is None
        assert obs.now.endswith("Z")

    def test_tools_are_plain_json_and_private(self, scenario) -> None:
        """The tool schemas serialise with the json module, and an agent mutating them affects no other episode."""
        import json

        first = make(scenario, 0).reset()
        assert json.loads(json.dumps(first.tools)) == list(first.tools)
        first.tools[0]["name"] = "hacked"
        assert make(scenario, 0).reset().tools[0]["name"] != "hacked"

    def test_tools_are_one_copy_per_episode(self, scenario) -> None:
        """Every observation of an episode, and the environment, give the same copy of the schemas, equal to
        the tools' own schemas, and an observation compares equal to one built from that copy."""
        from simworld._world.tools import TOOLS

        env = make(scenario, 0)
        first = env.reset()
        second, _done = env.step({"tool": "get_plan", "args": {"plan_id": "pln_001"}})
        assert first.tools is second.tools is env.tool_schemas
        assert list(first.tools) == [TOOLS[name].schema() for name in scenario.tools]
        assert first == Observation(first.request, first.policy, tuple(first.tools), first.step, first.now)
        assert "tools=" in repr(first) and "set_schedule" in repr(first)

    def test_last_result_is_the_previous_call(self, scenario) -> None:
        """After a call the observation carries that call's tool, status and result."""
        env = make(scenario, 0)
        env.reset()
        obs, done = env.step({"tool": "get_plan", "args": {"plan_id": "pln_001"}})
        assert not done and obs.last_tool == "get_plan" and obs.last_status == "ok"
        assert obs.last_result["id"] == "pln_001"
        obs, _ = env.step({"tool": "get_plan", "args": {"plan_id": "nope"}})
        assert obs.last_status == "error" and "nope" in obs.last_result["error"]


class TestEnding:
    def test_terminal_tool_ends(self, scenario) -> None:
        """A terminal tool ends the episode with its outcome and stop reason 'terminal'."""
        ep = _play(scenario, _Fn(lambda o: {"tool": "decline", "args": {"reason": "no"}}))
        assert ep.outcome == "decline" and ep.stop_reason == "terminal" and len(ep.events) == 1

    def test_none_stops(self, scenario) -> None:
        """An agent that returns None stops the episode with no outcome."""
        ep = _play(scenario, NoopAgent())
        assert ep.outcome is None and ep.stop_reason == "agent_stopped" and ep.events == ()

    def test_max_steps(self, scenario) -> None:
        """An agent that never stops is cut off at the scenario's max_steps."""
        ep = _play(scenario, _Fn(lambda o: {"tool": "get_plan", "args": {"plan_id": "pln_001"}}))
        assert ep.stop_reason == "max_steps" and len(ep.events) == scenario.max_steps

    def test_timeout_uses_the_real_clock(self, scenario) -> None:
        """A slow agent is stopped at timeout_s measured on the real clock, even under a frozen one."""
        import attrs

        quick = attrs.evolve(scenario, timeout_s=0.05, max_steps=10_000)

        def slow(o):
            end = wall_monotonic() + 0.02
            while wall_monotonic() < end:
                pass
            return {"tool": "get_plan", "args": {"plan_id": "pln_001"}}

        with TimeGuard() as guard:
            ep = _play(quick, _Fn(slow), guard=guard)
        assert ep.stop_reason == "timeout" and 2 <= len(ep.events) <= 10

    def test_crash_is_recorded_not_raised(self, scenario) -> None:
        """An agent that raises ends the episode as agent_error, with the error kept and earlier events intact."""
        calls = []

        def boom(o):
            calls.append(1)
            if len(calls) > 1:
                raise ZeroDivisionError("agent bug")
            return {"tool": "get_plan", "args": {"plan_id": "pln_001"}}

        ep = _play(scenario, _Fn(boom))
        assert ep.stop_reason == "agent_error" and "ZeroDivisionError: agent bug" in ep.error
        assert len(ep.events) == 1

    def test_malformed_action_is_an_error_result(self, scenario) -> None:
        """An action that is not {"tool": ..., "args": ...} becomes an error event the agent can read."""
        env = make(scenario, 0)
        env.reset()
        obs, done = env.step(["not", "an", "action"])
        assert not done and obs.last_status == "error" and "Expected an action" in obs.last_result["error"]
        obs, _ = env.step({"tool": "get_plan", "args": "pln_001"})
        assert obs.last_status == "error" and "JSON object" in obs.last_result["error"]


class TestSealedEpisode:
    def test_counters_closed_and_counted(self, scenario) -> None:
        """Counters are exactly the closed list and count calls by status and simulated seconds."""
        steps = [{"tool": "get_plan", "args": {"plan_id": "pln_001"}},
                 {"tool": "get_plan", "args": {"plan_id": "x"}},
                 {"tool": "defer_instalment", "args": {"plan_id": "pln_001", "seq": 1, "mode": "end"}},
                 {"tool": "decline", "args": {"reason": "r"}, "usage": {"input_tokens": 10, "output_tokens": 3}}]
        it = iter(steps)
        ep = _play(scenario, _Fn(lambda o: next(it)))
        c = dict(ep.counters)
        assert tuple(c) == COUNTERS
        assert c["steps"] == 4 and c["tool_calls"] == 4 and c["error_calls"] == 1 and c["denied_calls"] == 1
        assert c["input_tokens"] == 10 and c["output_tokens"] == 3 and c["total_tokens"] == 13
        assert c["sim_seconds"] == pytest.approx(0.2 + 0.2 + 1.0 + 0.5)

    def test_states_after_each_event(self, scenario) -> None:
        """The episode keeps the state after every event; only writes change it."""
        ep = _play(scenario, StepsAgent(scenario.solutions[0], dict(scenario.instance(0).vars), "t"), seed=0)
        assert len(ep.states) == len(ep.events)
        hashes = [ep.initial_state.hash] + [s.hash for s in ep.states]
        for event, before, after in zip(ep.events, hashes[:-1], hashes[1:], strict=True):
            if event.kind == "read":
                assert before == after
        assert ep.final_state.hash != ep.initial_state.hash

    def test_episode_is_read_only(self, scenario) -> None:
        """A sealed episode cannot be changed."""
        ep = _play(scenario, NoopAgent())
        with pytest.raises(AttributeError):
            ep.outcome = "act"  # type: ignore[misc]
        with pytest.raises(TypeError):
            ep.counters["steps"] = 3  # type: ignore[index]


    def test_event_lines_are_the_events_own(self, scenario) -> None:
        """An episode's event lines and events hash are its events' (made once), and an episode evolved with other
        events has theirs, not a copy of the first one's."""
        import attrs

        from simworld._world.events import event_lines, events_hash

        ep = _play(scenario, StepsAgent(scenario.solutions[0], dict(scenario.instance(0).vars), "t"), seed=0)
        assert list(ep.event_lines()) == event_lines(ep.events) and ep.events_hash == events_hash(ep.events)
        assert ep.event_lines() is ep.event_lines()
        fewer = attrs.evolve(ep, events=ep.events[:-1])
        assert list(fewer.event_lines()) == event_lines(ep.events[:-1]) != list(ep.event_lines())
        assert fewer.events_hash == events_hash(ep.events[:-1]) != ep.events_hash


class TestSimulatedTimeForForeignCode:
    def test_agent_sees_simulated_now(self, scenario) -> None:
        """Under a TimeGuard an agent's datetime.now() is the simulated time, and it moves with tool latency."""
        seen: list[datetime] = []

        def agent(o):
            seen.append(datetime.utcnow())
            return {"tool": "get_plan", "args": {"plan_id": "pln_001"}} if len(seen) < 3 else None

        with TimeGuard() as guard:
            _play(scenario, _Fn(agent), seed=0, guard=guard)
        start = scenario.instance(0).clock.replace(tzinfo=None)
        assert seen[0] == start
        assert (seen[2] - seen[0]).total_seconds() == pytest.approx(0.4)

    def test_guard_moves_as_freezegun_does(self) -> None:
        """TimeGuard.move_to leaves foreign code's clocks where freezegun's own move_to would, in any zone."""
        import time

        instants = [datetime(2026, 3, 1, 9, 0, 0, 123456, tzinfo=UTC),
                    datetime(2024, 2, 29, 23, 30, tzinfo=timezone(timedelta(hours=-5))),
                    datetime(2001, 1, 1, 0, 0, 1, tzinfo=timezone(timedelta(hours=13))),
                    datetime(2030, 1, 1, 12, 0)]  # naive: freezegun's own reading
        with TimeGuard() as guard:
            for instant in instants:
                guard.move_to(instant)
                ours = (datetime.now(UTC), datetime.utcnow(), time.time())
                guard._factory.move_to(instant)
                theirs = (datetime.now(UTC), datetime.utcnow(), time.time())
                assert ours == theirs
                assert ours[0] == (instant if instant.tzinfo else instant.replace(tzinfo=UTC))

    def test_real_clock_not_frozen(self) -> None:
        """wall_monotonic keeps moving while freezegun is active."""
        with TimeGuard():
            a = wall_monotonic()
            while wall_monotonic() == a:
                pass
            assert wall_monotonic() > a


def test_scenarios_load_inside_a_time_guard() -> None:
    """make() and load_suite() work inside a running TimeGuard (freezegun swaps date classes while it runs)."""
    import simworld
    from simworld._world.clock import TimeGuard

    with TimeGuard():
        env = simworld.make("waive-small-fee", seed=2)
        obs = env.reset()
    assert obs.request and env.world.state.get("plans", env.scenario.target["plan"]) is not None


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), timezones=st.sampled_from([UTC, timezone(timedelta(hours=-9)),
                                                                           timezone(timedelta(hours=5, minutes=30))])))
def test_an_instant_is_written_as_strftime_writes_it(when: datetime) -> None:
    """format_instant writes the fields itself (freezegun's strftime inspects the stack): the same text."""
    from simworld._world.clock import format_instant

    utc = when.astimezone(UTC)
    assert format_instant(when) == utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


class TestInterruptWatch:
    def test_real_ctrl_c_is_told_from_the_agents(self) -> None:
        """Inside a watch a SIGINT is noted and raises KeyboardInterrupt as before; the old handler is back after.

        Python's own handler is put in place first: a test process started in the background by a shell without job
        control inherits SIGINT ignored, which a watch keeps (see the next test)."""
        import signal

        from simworld._episode.deadline import InterruptWatch

        inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with InterruptWatch() as watch:
                assert signal.getsignal(signal.SIGINT) == watch._note
                assert not watch.is_users(KeyboardInterrupt())
                with pytest.raises(KeyboardInterrupt) as raised:
                    signal.raise_signal(signal.SIGINT)
                assert watch.seen and watch.is_users(raised.value)
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        finally:
            signal.signal(signal.SIGINT, inherited)

    def test_ignored_sigint_stays_ignored(self) -> None:
        """A process that ignores SIGINT (a run's worker) keeps ignoring it inside a watch."""
        import signal

        from simworld._episode.deadline import InterruptWatch

        before = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            with InterruptWatch():
                assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        finally:
            signal.signal(signal.SIGINT, before)


def _deface(value: Any) -> None:
    """Change every dict and list in ``value`` in place, as an agent that normalises what it reads might."""
    if isinstance(value, dict):
        for key in list(value):
            _deface(value[key])
            value[key] = "999.99" if isinstance(value[key], str | int | float) else value[key]
        value["injected"] = "1234.56"
    elif isinstance(value, list):
        for item in value:
            _deface(item)
        value.append("1234.56")


class TestWhatAnAgentIsShownIsItsOwn:
    """An agent that changes the results it is shown (or the log it resumes with) in place changes nothing recorded:
    not the events the graders read, not the event file, not the grade."""

    def test_a_vandal_records_what_the_reference_records(self) -> None:
        import copy

        import attrs

        from simworld._agents.kinds import build_agent_factory
        from simworld._episode.judge import graded_line
        from simworld._world.events import event_lines

        reference = build_agent_factory("reference")

        class Vandal:
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def act(self, observation: Observation) -> Any:
                clean = attrs.evolve(observation, last_result=copy.deepcopy(observation.last_result),
                                     history=copy.deepcopy(observation.history))
                action = self.inner.act(clean)  # the reference, on what it was shown before it was defaced
                _deface(observation.last_result)
                for entry in observation.history:
                    _deface(entry)
                return action

        def vandal(sc: Any, seed: int, variables: dict[str, Any]) -> Vandal:
            return Vandal(reference(sc, seed, variables))

        defaced = 0
        for sc in load_suite():
            plain = play(Environment(sc, 4, agent_name="reference"), reference)
            spoiled = play(Environment(sc, 4, agent_name="reference"), vandal)
            assert event_lines(spoiled.events) == event_lines(plain.events), sc.id
            assert spoiled.final_state.hash == plain.final_state.hash
            mine, theirs = graded_line(sc, spoiled), graded_line(sc, plain)
            assert (mine["passed"], mine["total"], mine["checks"]) == (theirs["passed"], theirs["total"],
                                                                       theirs["checks"]), sc.id
            defaced += sum(isinstance(e.result, dict | list) for e in spoiled.events)
        assert defaced > 50  # the vandal had results to deface

    def test_only_an_agent_that_says_it_only_reads_is_shown_the_recorded_results(self, scenario) -> None:
        seen: list[tuple[Any, Any]] = []

        class Reader:
            reads_results_only = True

            def __init__(self) -> None:
                self.calls = 0

            def act(self, observation: Observation) -> Any:
                seen.append((type(self).__name__, observation.last_result))
                self.calls += 1
                return {"tool": "get_plan", "args": {"plan_id": "pln_001"}} if self.calls < 3 else None

        class Changer(Reader):  # a subclass that does not say it again
            pass

        for cls in (Reader, Changer):
            episode = play(Environment(scenario, 0), lambda sc, seed, v, cls=cls: cls())
            shown = [result for name, result in seen if name == cls.__name__][1:]
            recorded = [e.result for e in episode.events]
            assert shown == recorded and len(shown) == 2
            assert all((a is b) is (cls is Reader) for a, b in zip(shown, recorded, strict=True))

    def test_an_environment_stepped_by_hand_shows_copies(self, scenario) -> None:
        env = Environment(scenario, 0)
        env.reset()
        observation, _ = env.step({"tool": "get_plan", "args": {"plan_id": "pln_001"}})
        assert observation.last_result == env.world.events[-1].result
        assert observation.last_result is not env.world.events[-1].result
