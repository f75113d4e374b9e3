"""Agents built from --agent specs."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

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


class TestRandomAgentReading:
    """What the random agent reads of an observation, read the cheap way, is what it always read."""

    @settings(max_examples=200, deadline=None)
    @example("about pol_", None)  # the first step: "None" joins the request's last word, as it always did
    @example("about cus_01", None)
    @example("about cus_01", {"plan_id": "pln_001"})
    @example("", {"notes": "x\x7fpay-2", "ok": True, "n": None, "ids": ["pln_001", {"k": "fee-1"}]})
    @example("", {"notes": "pln_001\\pay-2 é\u200bcus-1\x85pol-3"})
    @given(st.text(alphabet="cuspolnfeay_-01{}'\" \né", max_size=40),
           st.one_of(st.none(), st.text(alphabet="cuspolnfeay_-01{}'\" \n\x7fé", max_size=30),
                     st.dictionaries(st.text(alphabet="cuspoln_-01", max_size=6),
                                     st.text(alphabet="cuspolnfeay_-01{}'\" \n\x7fé", max_size=20), max_size=3),
                     # a result as tools give them: nested, with literals, and escapes (a backslash, a control)
                     st.dictionaries(st.text(alphabet="cuspoln_-01", max_size=6), st.recursive(
                         st.none() | st.booleans() | st.integers(-5, 10**20) | st.floats(allow_nan=False) |
                         st.text(alphabet="cuspolnfeay_-01'\" \\\t\x85\u200b\x7féTrueNn", max_size=20),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                             st.text(alphabet="cuspolnfeay_-01", max_size=6), inner, max_size=3), max_leaves=8),
                         max_size=4),
                     st.lists(st.text(alphabet="cuspoln_-01", max_size=8), max_size=3)))
    def test_ids_found_as_in_the_request_and_result_joined(self, request_text: str, result: object) -> None:
        """The ids found are those one search of the request followed by the result's repr finds, in order."""
        from simworld._agents.kinds import _ID, RandomAgent

        agent = RandomAgent(0, SID)
        for _ in range(2):  # the request's ids are kept after the first step: the second reads them again
            assert agent._ids_in(request_text, result) == _ID.findall(request_text + repr(result))

    @example("xcus_1 cus_2 \u00e9cus_3 -pay_4 fee-5x pln_1-pay_2 _pol_3 pol_ acus_a-pay_1\ncus_9 "
             "cee_1 fol-2 pus_3 fay_4 cln_5")
    @given(st.text(alphabet="cuspolnfeayx_-01 \n\t\"'\u00e9\u00b2\u0661\u200b.{}", max_size=80))
    def test_the_id_expression_finds_what_the_plain_one_finds(self, text: str) -> None:
        """The random agent's id expression, written to start with a letter, finds what the expression it stands for
        finds, in order: a Unicode word character before an id (\u00e9, \u00b2, an Arabic-Indic digit) forbids it,
        a hyphen or a start of text allows it."""
        import re

        from simworld._agents.kinds import _ID

        plain = re.compile(r"\b(?:cus|pol|pln|fee|pay)[_-][A-Za-z0-9_-]+\b")
        assert _ID.findall(text) == plain.findall(text)

    def test_shared_schemas_are_the_tools_read_only(self, scenario) -> None:
        """shared_tools holds what tools holds, read-only and shared by episodes; tools stays each episode's own."""
        first, second = Environment(scenario, 0).reset(), Environment(scenario, 1).reset()
        shared = first.shared_tools
        assert shared is second.shared_tools
        assert [orjson.loads(orjson.dumps(dict(_thawed(t)))) for t in shared] == list(first.tools)
        with pytest.raises(TypeError):
            shared[0]["name"] = "x"  # type: ignore[index]
        assert first.tools is not second.tools and first.tools[0] is not shared[0]


def _thawed(value: object) -> object:
    """A frozen schema as plain dicts and lists."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return value


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


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**9), st.lists(st.sampled_from(["cus_001", "pln_002", "fee_003"]), max_size=3))
def test_the_random_agent_draws_what_random_randint_and_choice_draw(seed: int, ids: list[str]) -> None:
    """Each drawer gives, from the same generator state, what the public randint/choice calls give."""
    import random

    from simworld._agents import kinds

    def agent(rng: random.Random) -> object:
        a = kinds.RandomAgent(0, SID)
        a.rng, a.ids = rng, list(ids)
        return a

    public = {
        kinds._draw_date: lambda r: f"20{r.randint(20, 30)}-{r.randint(1, 12):02d}-{r.randint(1, 31):02d}",
        kinds._draw_amount: lambda r: f"{r.randint(-5, 2000)}.{r.randint(0, 999):0{r.randint(1, 3)}d}",
        kinds._draw_text: lambda r: r.choice(ids) if ids and r.random() < 0.8 else r.choice(["", "x", "cus_001"]),
        kinds._drawer({"type": "integer"}): lambda r: r.randint(0, 32),
        kinds._drawer({"enum": ["a", "b", "c"]}): lambda r: r.choice(["a", "b", "c"]),
        kinds._drawer({"type": "array", "items": {"type": "integer"}}):
            lambda r: [r.randint(0, 32) for _ in range(r.randint(0, 4))],
    }
    for drawer, draw in public.items():
        mine, theirs = random.Random(seed), random.Random(seed)
        assert [drawer(agent(mine)) for _ in range(5)] == [draw(theirs) for _ in range(5)]
        assert mine.getstate() == theirs.getstate()
