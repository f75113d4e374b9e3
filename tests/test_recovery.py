"""Crash and resume: the agent dies at a call, before or after its effect lands; a fresh agent resumes."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.episode import Observation
from simworld._episode.judge import grade, solution_end_states
from simworld._episode.play import play
from simworld._episode.replay import rebuild, replay
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_scenario, load_suite
from simworld.errors import ScenarioError

SUITE = {s.id: s for s in load_suite()}
PAY = SUITE["recover-payment-after-crash"]
SPLIT = SUITE["recover-split-before-write"]

_instances = itertools.count(1)


class NaiveRetry:
    """Starts over after a crash and pays the first unpaid instalment with a key of its own."""

    def __init__(self) -> None:
        self.key = f"naive-{next(_instances)}"
        self.seen: list[Observation] = []

    def act(self, obs: Observation) -> dict[str, Any] | None:
        self.seen.append(obs)
        if obs.last_tool is None:
            return {"tool": "find_customer", "args": {"query": "Kofi Mensah"}}
        if obs.last_tool == "find_customer":
            return {"tool": "get_plan", "args": {"plan_id": "pln_032"}}
        if obs.last_tool == "get_plan":
            due = next(i for i in obs.last_result["instalments"] if i["status"] == "planned")
            return {"tool": "apply_payment", "args": {"plan_id": "pln_032", "amount": due["amount"],
                                                      "idempotency_key": self.key}}
        if obs.last_tool == "apply_payment":
            return {"tool": "finish", "args": {"summary": "Paid."}}
        return None


def _graded(scenario, factory, seed=0):
    episode = play(Environment(scenario, seed, agent_name="t"), factory)
    return episode, grade(scenario, episode, solution_end_states(scenario, seed))


class TestAfterSideEffect:
    def test_same_key_retry_is_safe(self) -> None:
        """The reference retries with the same idempotency key: one payment, a duplicate no-op, and a pass."""
        episode, result = _graded(PAY, build_agent_factory("reference"))
        assert result["passed"], result["checks"]
        pays = [e for e in episode.events if e.tool == "apply_payment"]
        assert [p.result["duplicate"] for p in pays] == [False, True]
        new = [p for p in episode.final_state.records("payments")
               if p.plan_id == "pln_032" and episode.initial_state.get("payments", p.id) is None]
        assert len(new) == 1

    def test_naive_retry_pays_twice_and_fails(self) -> None:
        """An agent that starts over with a new key posts a second payment; the graders catch it."""
        episode, result = _graded(PAY, lambda sc, s, v: NaiveRetry())
        assert not result["passed"]
        new = [p for p in episode.final_state.records("payments")
               if p.plan_id == "pln_032" and episode.initial_state.get("payments", p.id) is None]
        assert len(new) == 2
        assert any(d["path"].startswith("payments/pln_032/") for d in result["state_diff"])

    def test_resumed_agent_sees_the_log_without_the_lost_call(self) -> None:
        """The fresh agent starts resumed, with the session log that lacks the call whose effect landed."""
        agents: list[NaiveRetry] = []

        def factory(sc, s, v):
            agents.append(NaiveRetry())
            return agents[-1]

        episode = play(Environment(PAY, 0, agent_name="t"), factory)
        assert len(agents) == 2
        first = agents[1].seen[0]
        assert first.resumed and [h["tool"] for h in first.history] == ["find_customer", "get_plan"]
        assert episode.crash is not None and episode.crash.after_side_effect
        assert episode.crash.lost is not None and episode.crash.lost.tool == "apply_payment"
        assert episode.events[episode.crash.position] == episode.crash.lost  # graders see what happened


class TestBeforeSideEffect:
    def test_crashed_call_has_no_effect_and_resume_finishes(self) -> None:
        """Dying before the write lands leaves the world untouched; the resumed agent writes once and passes."""
        episode, result = _graded(SPLIT, build_agent_factory("reference"), seed=2)
        assert result["passed"], result["checks"]
        assert episode.crash is not None and episode.crash.lost is None
        writes = [e for e in episode.events if e.tool == "set_schedule"]
        assert len(writes) == 1 and episode.events.index(writes[0]) == episode.crash.position


class TestLogs:
    def test_crash_record_replays_and_regrades(self, tmp_path) -> None:
        """The event file carries the crash (and the lost call); replay and rebuild give the same episode."""
        scenarios = [PAY, SPLIT, SUITE["recover-due-day-after-write"]]
        result = run_suite(scenarios, [5], "reference", build_agent_factory("reference"), tmp_path)
        for line, scenario in zip(result.results, scenarios, strict=True):
            path = tmp_path / "events" / f"{scenario.id}__seed-5.jsonl"
            records = [orjson.loads(x)["record"] for x in path.read_bytes().splitlines()]
            assert records.count("crash") == 1
            report = replay(path, SUITE)
            assert report.final_state_hash == line["state_hash"]
            episode, _ = rebuild(path, SUITE)
            assert episode.events_hash == line["events_hash"]


    @pytest.mark.parametrize("position, order", [
        (0, ["header", "crash", 1, 2, "footer"]), (1, ["header", 1, "crash", 2, "footer"]),
        (2, ["header", 1, 2, "crash", "footer"]), (3, ["header", 1, 2, "footer"]), (None, ["header", 1, 2, "footer"]),
    ])
    def test_crash_record_sits_before_the_event_at_its_position(self, position, order) -> None:
        """An event file has its crash record before the event at its position (after the last one at the end); a
        position past that has none."""
        from simworld._world.events import Event, event_file_bytes

        events = [Event(seq, "2026-01-01T00:00:00.000Z", "get_plan", {}, {}, "ok", 0.1, "read") for seq in (1, 2)]
        crash = None if position is None else {"at_call": 1, "after_side_effect": False, "position": position,
                                               "lost": None}
        lines = [orjson.loads(x) for x in event_file_bytes({"scenario": "s"}, events, {"outcome": None},
                                                           crash).splitlines()]
        assert [x.get("seq", x["record"]) if x["record"] == "event" else x["record"] for x in lines] == order


class TestLoading:
    @pytest.mark.parametrize("bad", [{"crash_at_call": 0}, {"crash_at_call": "3"}, {"crash_at_call": 2, "after": 1},
                                     {"crash_at_call": 2, "after_side_effect": "yes"}])
    def test_bad_recovery_block(self, tmp_path, bad) -> None:
        """A malformed recovery block fails at load naming it."""
        import shutil

        from simworld._scenario.scenario import bundled_root

        root = bundled_root()
        shutil.copytree(root / "scenarios" / PAY.id, tmp_path / "scenarios" / PAY.id)
        shutil.copytree(root / "snapshots", tmp_path / "snapshots")
        task = tmp_path / "scenarios" / PAY.id / "task.json"
        data = orjson.loads(task.read_bytes())
        data["recovery"] = bad
        task.write_bytes(orjson.dumps(data))
        with pytest.raises(ScenarioError, match="recovery"):
            load_scenario(tmp_path / "scenarios" / PAY.id)
