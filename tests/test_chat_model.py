"""A chat model's every word is recorded, judged and exported as the conversation it was shown.

A scripted model behind a real local endpoint (tests/chat_stub.py) talks as chat models do (text beside
its calls, two calls in one response, a 429 first, a final plain reply, a malformed body); simworld runs
it with ``--agent openai:`` as a user would.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from chat_stub import WAIVE_MALFORMED, WAIVE_PLAIN_END, WAIVE_TALKING, leaking, serving
from helpers import simworld

from simworld._episode.contract import CONTRACT, CONTRACT_VERSION
from simworld._episode.environment import Environment
from simworld._scenario.scenario import load_suite

SID = "waive-small-fee"


def _run(base_url: str, out: Path, *extra: str) -> Any:
    return simworld("run", "--agent", "openai:scripted", "--base-url", base_url, "--scenario", SID, "--seed", "0",
                    "--max-retries", "2", "--out", str(out), *extra)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _events(out: Path) -> list[dict[str, Any]]:
    return [r for r in _lines(out / "events" / f"{SID}__seed-0.jsonl") if r["record"] == "event"]


def _export(out: Path, fmt: str) -> dict[str, Any]:
    target = out.parent / f"{out.name}.{fmt}.jsonl"
    done = simworld("export", str(out), "--format", fmt, "--out", str(target))
    assert done.returncode == 0, done.stderr
    (line,) = _lines(target)
    return line


def _no_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with call ids replaced by their order (an export names a call by its seq, the model by its
    own id), checking that every tool answer names the call just made."""
    out, last = [], None
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            (call,) = m["tool_calls"]  # one call a message
            last = call["id"]
            m["tool_calls"] = [{**call, "id": "ID"}]
        if m.get("role") == "tool":
            assert m["tool_call_id"] == last, "a tool answer must name the call before it"
            m["tool_call_id"] = "ID"
        if m.get("content") is None:
            m.pop("content", None)
        out.append(m)
    return out


@pytest.fixture(scope="module")
def talked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The talking model's run (its directory) and the requests the model got."""
    out = tmp_path_factory.mktemp("talk") / "run"
    with serving(WAIVE_TALKING) as model:
        done = _run(model.base_url, out)
        assert done.returncode == 0, done.stdout + done.stderr
        return out, model.requests


class TestTalkingModel:
    def test_every_word_is_an_event_in_order(self, talked: tuple[Path, list[dict[str, Any]]]) -> None:
        """Text beside a call is a say event just before it (same seq); a response's two calls follow its text."""
        out, _ = talked
        shape = [(e["kind"], e["tool"] or e["args"]["text"]) for e in _events(out)]
        assert shape == [
            ("say", "Hello Jon, let me find your account."), ("read", "find_customer"),
            ("say", "I have your account; checking your details and fees now."), ("read", "get_customer"),
            ("read", "list_fees"), ("write", "waive_fee"),
            ("say", "Done: the late fee of 6.000 BHD is waived."), ("terminal", "finish")]
        events = _events(out)
        for say, call in zip(events, events[1:], strict=False):
            if say["kind"] == "say":
                assert say["seq"] == call["seq"] and say["at"] == call["at"]

    def test_the_episode_is_graded_and_versioned(self, talked: tuple[Path, list[dict[str, Any]]]) -> None:
        """The words are judged (the figure 6.000 BHD is the customer's, the waiver is true): the episode passes,
        its line names the contract, and the 429 was retried."""
        out, requests = talked
        (line,) = _lines(out / "results.jsonl")
        assert line["passed"] and line["contract"] == CONTRACT_VERSION
        assert {c["name"]: c["passed"] for c in line["checks"]}["comms:figures"] is True
        assert line["counters"]["tool_calls"] == 5 and len(requests) == 5  # four turns, one of them throttled

    def test_the_model_is_told_the_rules(self, talked: tuple[Path, list[dict[str, Any]]]) -> None:
        """Every request's system message states the conversation's rules before the policy."""
        _, requests = talked
        assert all(r["messages"][0]["role"] == "system" and r["messages"][0]["content"].startswith(CONTRACT)
                   for r in requests)

    @pytest.mark.parametrize("fmt", ["openai", "trl"])
    def test_the_export_is_the_conversation_the_model_saw(self, talked: tuple[Path, list[dict[str, Any]]],
                                                           fmt: str) -> None:
        """The export's messages are the last request's messages plus the model's last response, word for word."""
        out, requests = talked
        exported = _export(out, fmt)["messages"]
        seen = requests[-1]["messages"]
        final = {"role": "assistant", "content": "Done: the late fee of 6.000 BHD is waived.",
                 "tool_calls": [{"id": "ID", "type": "function", "function": {
                     "name": "finish", "arguments": '{"summary":"Waived the 6.000 BHD late fee as a one-off."}'}}]}
        if fmt == "openai":
            assert _no_ids(exported) == [*_no_ids(seen), final]
        else:  # the same turns, arguments as objects and tool turns named
            assert [(m["role"], m.get("content")) for m in exported] == \
                [(m["role"], m.get("content")) for m in [*seen, final]]
            assert [c["function"]["arguments"] for m in exported for c in m.get("tool_calls", ())] == \
                [orjson.loads(c["function"]["arguments"]) for m in [*seen, final] for c in m.get("tool_calls", ())]

    def test_native_export_carries_every_word(self, talked: tuple[Path, list[dict[str, Any]]]) -> None:
        """The native line holds each say event in place among the calls, and the contract."""
        out, _ = talked
        native = _export(out, "native")
        assert [c["args"]["text"] for c in native["calls"] if c["kind"] == "say"] == [
            "Hello Jon, let me find your account.", "I have your account; checking your details and fees now.",
            "Done: the late fee of 6.000 BHD is waived."]
        assert native["contract"] == CONTRACT_VERSION

    def test_replay_and_grade_read_the_words(self, talked: tuple[Path, list[dict[str, Any]]]) -> None:
        """replay confirms the state from a log with say events; grade rewrites the same results byte for byte."""
        out, _ = talked
        done = simworld("replay", str(out / "events" / f"{SID}__seed-0.jsonl"))
        assert done.returncode == 0, done.stderr
        regraded = out.parent / "regraded.jsonl"
        done = simworld("grade", str(out), "--out", str(regraded))
        assert done.returncode == 0, done.stderr
        assert regraded.read_bytes() == (out / "results.jsonl").read_bytes()

    def test_the_same_model_writes_the_same_bytes(self, talked: tuple[Path, list[dict[str, Any]]],
                                                  tmp_path: Path) -> None:
        """The same script run again, under another PYTHONHASHSEED: results and event file byte-identical."""
        out, _ = talked
        with serving(WAIVE_TALKING) as model:
            import os
            import subprocess

            again = tmp_path / "again"
            done = subprocess.run([sys.executable, "-m", "simworld", "run", "--agent", "openai:scripted",
                                   "--base-url", model.base_url, "--scenario", SID, "--seed", "0", "--out",
                                   str(again)], capture_output=True, text=True, timeout=300,
                                  env={**os.environ, "PYTHONHASHSEED": "12345"})
            assert done.returncode == 0, done.stderr
        assert (again / "results.jsonl").read_bytes() == (out / "results.jsonl").read_bytes()
        name = f"events/{SID}__seed-0.jsonl"
        assert (again / name).read_bytes() == (out / name).read_bytes()


class TestPlainReply:
    def test_a_plain_reply_is_the_last_word(self, tmp_path: Path) -> None:
        """A reply with no tool call is recorded and judged, and ends the episode: agent_stopped, no outcome."""
        with serving(WAIVE_PLAIN_END) as model:
            done = _run(model.base_url, tmp_path / "o")
        assert done.returncode == 1, done.stderr
        (line,) = _lines(tmp_path / "o" / "results.jsonl")
        assert line["stop_reason"] == "agent_stopped" and line["outcome"] is None and line["error"] is None
        last = _events(tmp_path / "o")[-1]
        assert last["kind"] == "say" and last["args"]["text"].startswith("I have looked at your account.")
        assert _export(tmp_path / "o", "openai")["messages"][-1] == {
            "role": "assistant", "content": "I have looked at your account. Please call us to discuss the fee."}


class TestBrokenEndpoint:
    def test_a_malformed_body_is_the_episodes_error(self, tmp_path: Path) -> None:
        """A 200 whose body is not a chat completion ends the episode as agent_error, recorded with its calls."""
        with serving(WAIVE_MALFORMED) as model:
            done = _run(model.base_url, tmp_path / "o")
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        (line,) = _lines(tmp_path / "o" / "results.jsonl")
        assert line["stop_reason"] == "agent_error" and "without choices" in line["error"]
        assert [e["tool"] for e in _events(tmp_path / "o")] == ["find_customer"]


class TestLeak:
    def test_what_a_model_leaks_is_on_the_record(self, tmp_path: Path) -> None:
        """Another customer's e-mail in the model's text is recorded in the events and the export, not dropped."""
        (scenario,) = load_suite(None, [SID])
        env = Environment(scenario, 0)
        env.reset()
        other = next(c for c in env.world.state.records("customers") if c.id != "cus_010" and c.email)
        with serving(leaking(other.email)) as model:
            done = _run(model.base_url, tmp_path / "o")
        assert done.returncode == 1, done.stderr
        says = [e["args"]["text"] for e in _events(tmp_path / "o") if e["kind"] == "say"]
        assert len(says) == 1 and other.email in says[0]
        assert other.email in _export(tmp_path / "o", "openai")["messages"][-1]["content"]


AGENT = """\
import json, sys
for i, line in enumerate(sys.stdin):
    observation = json.loads(line)
    if observation.get("type") == "end":
        break
    if i == 0:
        action = {"say": "Looking you up.", "tool": "find_customer", "args": {"query": "Jon Park"}}
    elif i == 1:
        action = {"say": "Still with you."}
    else:
        action = {"say": "I cannot do more today.", "stop": True}
    print(json.dumps(action), flush=True)
"""


def test_an_agent_process_speaks_too(tmp_path: Path) -> None:
    """The process protocol carries say: beside a call, alone (the episode goes on) and as a last word."""
    (tmp_path / "agent.py").write_text(AGENT)
    done = simworld("run", "--agent", f"cmd:{sys.executable} agent.py", "--scenario", SID, "--seed", "0",
                    "--out", "o", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert [(e["kind"], e["tool"] or e["args"]["text"]) for e in _events(tmp_path / "o")] == [
        ("say", "Looking you up."), ("read", "find_customer"), ("say", "Still with you."),
        ("say", "I cannot do more today.")]
    (line,) = _lines(tmp_path / "o" / "results.jsonl")
    assert line["stop_reason"] == "agent_stopped" and line["counters"]["steps"] == 2


def test_a_resumed_script_counts_calls_not_words() -> None:
    """A scripted agent resumed after a crash takes the log's calls as its steps done; what was said is not a step."""
    from simworld._episode.episode import Observation
    from simworld._episode.steps import StepsAgent

    (scenario,) = load_suite(None, [SID])
    steps = scenario.solutions[0]
    env = Environment(scenario, 0)
    env.reset()
    agent = StepsAgent(steps, dict(env.variables), "test")
    history = ({"seq": 0, "say": "Let me look."},
               {"seq": 0, "tool": steps[0].tool, "args": {}, "status": "ok", "result": {"customers": []}})
    observation = Observation("request", "policy", (), 1, "2024-01-01T00:00:00.000Z", resumed=True, history=history)
    action = agent.act(observation)
    assert action is not None and action["tool"] == steps[1].tool


def _episode_bytes(out: Path) -> tuple[list[bytes], dict[str, Any]]:
    """The event lines of a run's one episode and its result line, without what names the client (the agent)."""
    events = [line for line in (out / "events" / f"{SID}__seed-0.jsonl").read_bytes().splitlines()
              if orjson.loads(line)["record"] == "event"]
    (line,) = _lines(out / "results.jsonl")
    return events, {k: v for k, v in line.items() if k != "agent"}


def _leak_script() -> Any:
    (scenario,) = load_suite(None, [SID])
    env = Environment(scenario, 0)
    env.reset()
    return leaking(next(c for c in env.world.state.records("customers") if c.id != "cus_010" and c.email).email)


SCRIPTS = {"talking": lambda: WAIVE_TALKING, "plain-end": lambda: WAIVE_PLAIN_END, "leak": _leak_script,
           "malformed": lambda: WAIVE_MALFORMED}


def _by_client(client: str, script: Any, out: Path) -> list[dict[str, Any]]:
    """The episode played by ``client`` (inspect or verifiers), in a process of its own; the requests it made."""
    import os
    import subprocess

    root = Path(__file__).resolve().parent.parent
    with serving(script) as model:
        done = subprocess.run([sys.executable, str(root / "tests" / "chat_clients.py"), client, model.base_url,
                               str(out)], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(root)})
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return model.requests


def _by_inspect(script: Any, out: Path) -> list[dict[str, Any]]:
    return _by_client("inspect", script, out)


def _by_verifiers(script: Any, out: Path) -> list[dict[str, Any]]:
    return _by_client("verifiers", script, out)


def _by_simworld(script: Any, out: Path) -> list[dict[str, Any]]:
    with serving(script) as model:
        done = _run(model.base_url, out)
        assert done.returncode in (0, 1), done.stderr
        return model.requests


class TestThreeClients:
    """The same scripted model, reached by simworld's own agent, by Inspect and by verifiers over the same endpoint,
    writes the same events and results, byte for byte (but for the agent's name)."""

    @pytest.mark.parametrize("name", ["talking", "plain-end", "leak"])
    @pytest.mark.parametrize("client", ["inspect", "verifiers"])
    def test_the_same_episode_whoever_asks(self, tmp_path: Path, name: str, client: str) -> None:
        script = SCRIPTS[name]()
        seen_by_us = _by_simworld(script, tmp_path / "ours")
        seen = (_by_inspect if client == "inspect" else _by_verifiers)(script, tmp_path / "theirs")
        assert _episode_bytes(tmp_path / "theirs") == _episode_bytes(tmp_path / "ours")
        assert seen[0]["messages"][:2] == seen_by_us[0]["messages"][:2]  # the same rules, policy and request

    @pytest.mark.parametrize("client", ["inspect", "verifiers"])
    def test_a_broken_endpoint_is_recorded_alike(self, tmp_path: Path, client: str) -> None:
        """A malformed body ends the episode as agent_error whoever asked, with the same events (the error's
        wording is each client's own)."""
        _by_simworld(WAIVE_MALFORMED, tmp_path / "ours")
        (_by_inspect if client == "inspect" else _by_verifiers)(WAIVE_MALFORMED, tmp_path / "theirs")
        ours, theirs = _episode_bytes(tmp_path / "ours"), _episode_bytes(tmp_path / "theirs")
        assert theirs[0] == ours[0] and theirs[1]["stop_reason"] == ours[1]["stop_reason"] == "agent_error"
