"""Agents built from --agent specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.play import play
from simworld._scenario.scenario import load_suite
from simworld.errors import AgentSpecError

SID = "split-balance-three-ways"


@pytest.fixture(scope="module")
def scenario():
    (sc,) = load_suite(None, [SID])
    return sc


def _run(scenario, spec: str, seed: int = 0):
    return play(Environment(scenario, seed, agent_name=spec), build_agent_factory(spec))


class TestBuiltIns:
    def test_reference_plays_first_solution(self, scenario) -> None:
        """The reference agent plays the first solution to its terminal tool."""
        ep = _run(scenario, "reference", 9)
        assert [e.tool for e in ep.events] == [s.tool for s in scenario.solutions[0]]
        assert all(e.status == "ok" for e in ep.events) and ep.outcome == "act"

    def test_noop_calls_nothing(self, scenario) -> None:
        """The noop agent makes no call."""
        ep = _run(scenario, "noop")
        assert ep.events == () and ep.outcome is None

    def test_random_is_seeded(self, scenario) -> None:
        """The random agent makes the same calls for the same seed and different ones for another."""
        a, b, c = _run(scenario, "random", 1), _run(scenario, "random", 1), _run(scenario, "random", 2)
        assert a.events_hash == b.events_hash
        assert a.events_hash != c.events_hash
        assert len(a.events) >= 2


class TestUserAgents:
    def test_python_callable(self, scenario, tmp_path: Path, monkeypatch) -> None:
        """python:module:function uses a plain callable as the agent."""
        (tmp_path / "fn_agent.py").write_text(
            "def act(obs):\n"
            "    return None if obs.step else {'tool': 'escalate', 'args': {'reason': 'need a human'}}\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        ep = _run(scenario, "python:fn_agent:act")
        assert ep.outcome == "escalate"

    def test_python_class_fresh_per_episode(self, scenario, tmp_path: Path, monkeypatch) -> None:
        """python:module:Class is instantiated afresh for every episode."""
        (tmp_path / "cls_agent.py").write_text(
            "class Counter:\n"
            "    def __init__(self):\n"
            "        self.n = 0\n"
            "    def act(self, obs):\n"
            "        self.n += 1\n"
            "        return {'tool': 'decline', 'args': {'reason': str(self.n)}}\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        for _ in range(2):
            ep = _run(scenario, "python:cls_agent:Counter")
            assert ep.events[0].args["reason"] == "1"

    def test_scripted_file(self, scenario, tmp_path: Path) -> None:
        """scripted:PATH plays its lines in order, then stops."""
        script = tmp_path / "s.jsonl"
        script.write_text('{"tool": "get_plan", "args": {"plan_id": "{plan_id}"}}\n'
                          '{"tool": "get_policy", "args": {"policy_id": "{policy_id}"}}\n')
        ep = _run(scenario, f"scripted:{script}")
        assert [e.tool for e in ep.events] == ["get_plan", "get_policy"]
        assert ep.events[0].args == {"plan_id": "pln_001"} and ep.stop_reason == "agent_stopped"


class TestBadSpecs:
    @pytest.mark.parametrize("spec, match", [
        ("smart", "not a known agent"),
        ("python:nomodule_xyz:A", "cannot import module 'nomodule_xyz'"),
        ("python:os:no_such_attr", "has no attribute"),
        ("python:os:sep", "not a class or a callable"),
        ("python:justmodule", "expected python:MODULE:ATTR"),
        ("scripted:/no/such/file.jsonl", "cannot read"),
    ])
    def test_bad_spec_is_one_clear_error(self, spec: str, match: str) -> None:
        """A bad --agent spec fails at build time with a message saying what is wrong."""
        with pytest.raises(AgentSpecError, match=match):
            build_agent_factory(spec)

    def test_bad_script_line(self, tmp_path: Path) -> None:
        """A malformed script line is reported with its file and line number."""
        script = tmp_path / "bad.jsonl"
        script.write_text('{"tool": "get_plan", "args": {}}\n{"tool": 3}\n')
        with pytest.raises(AgentSpecError, match="bad.jsonl:2"):
            build_agent_factory(f"scripted:{script}")
