"""The verifiers environment: the suite as rows, simworld's tools, simworld's graders as the rubric.

Offline: each rollout is driven by a scripted stand-in for verifiers' AsyncOpenAI client (``client.chat.completions
.create(...)`` returning an OpenAI ``ChatCompletion``), which replays the reference solution, never calls a tool, or
fails, so nothing is fetched.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import verifiers as vf
from helpers import readme_example
from openai.types.chat import ChatCompletion

from simworld._agents.chat import RESUME_NOTE
from simworld._edges.export import export_run
from simworld._edges.session import suite_grid
from simworld._edges.verifiers import SimworldEnv, load_environment
from simworld._episode.contract import system_text
from simworld._episode.environment import Environment
from simworld._episode.episode import Observation
from simworld._episode.steps import StepsAgent
from simworld._grading.rewards import parts_reward
from simworld._running.runner import run_one
from simworld.errors import ScenarioError

SEED_LIST = (0, 1)
Reply = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], dict[str, Any]]


class ScriptedClient:
    """Enough of ``openai.AsyncOpenAI`` for verifiers' rollouts: ``chat.completions.create`` answers with ``reply``'s
    assistant message (content and/or tool calls) as a ``ChatCompletion``, with the given token usage."""

    base_url = "http://scripted.invalid/v1"

    def __init__(self, reply: Reply, usage: tuple[int, int] = (0, 0)) -> None:
        self.reply = reply
        self.usage = usage
        self.calls = 0
        self.chat = self
        self.completions = self

    async def create(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                     **_: Any) -> ChatCompletion:
        self.calls += 1
        message = self.reply(messages, tools)
        prompt_tokens, completion_tokens = self.usage
        return ChatCompletion.model_validate({
            "id": f"scripted-{self.calls}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}})

    async def close(self) -> None:
        return None


def reference_client(seeds: str) -> ScriptedClient:
    """Replays each row's reference solution, reading the results back from the conversation's tool messages.

    A row is known by its system and user messages (the policy and the request at its seed); two seeds of a scenario
    may read alike over different worlds, so the grid is one seed per evaluation, where the messages name the row.
    """
    index: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
    for scenario, seed in suite_grid(None, seeds):
        env = Environment(scenario, seed)
        first = env.reset()
        key = (system_text(first.policy), first.request)  # the system message: the rules, then the policy
        assert key not in index, (scenario.id, seed)
        index[key] = (scenario, dict(env.variables))

    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        scenario, variables = index[(messages[0]["content"], messages[1]["content"])]
        assert tools and {t["function"]["name"] for t in tools} == set(scenario.tools)
        results = [orjson.loads(m["content"]) for m in messages if m["role"] == "tool"]
        agent = StepsAgent(scenario.solutions[0], variables, scenario.id)
        action = agent.act(Observation("", "", (), 0, "", resumed=True, history=tuple({"result": r} for r in results)))
        if action is None:
            return {"role": "assistant", "content": ""}  # no words: the episode is the reference agent's
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{len(results)}", "type": "function",
             "function": {"name": action["tool"], "arguments": json.dumps(action["args"])}}]}

    return ScriptedClient(reply)


def silent_client() -> ScriptedClient:
    """A model that never calls a tool: it answers in words (7 tokens in, 3 out)."""
    return ScriptedClient(lambda messages, tools: {"role": "assistant", "content": "All is well."}, usage=(7, 3))


def evaluate(env: SimworldEnv, client: ScriptedClient) -> list[dict[str, Any]]:
    results = env.evaluate_sync(client=client, model="scripted", state_columns=["simworld"])  # type: ignore[arg-type]
    outputs = results["outputs"]
    assert len(outputs) == len(env.grid)
    return outputs


def _by_row(outputs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{o['info']['scenario']}__seed-{o['info']['seed']}": o for o in outputs}


class Run(list[dict[str, Any]]):
    """The reference outputs (one evaluation per seed) and the directory their episodes were written to."""

    out: Path


@pytest.fixture(scope="module")
def reference_outputs(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("verifiers-reference") / "run"
    run = Run()
    for n in SEED_LIST:
        run.extend(evaluate(load_environment(seeds=n, reward="passed", out=out), reference_client(str(n))))
    run.out = out
    return run


@pytest.fixture(scope="module")
def silent_outputs() -> list[dict[str, Any]]:
    return evaluate(load_environment(seeds="0..1", reward="passed"), silent_client())


class TestReference:
    def test_reference_passes_every_scenario(self, reference_outputs: Run) -> None:
        """A client replaying each reference solution gets reward 1.0 on every (scenario, seed), recovery included."""
        rows = _by_row(reference_outputs)
        grid = suite_grid(None, "0..1")
        assert sorted(rows) == sorted(f"{s.id}__seed-{n}" for s, n in grid)
        assert any(s.id.startswith("recover-") for s, _ in grid)
        failed = {k: [c for c in o["simworld"]["checks"] if not c["passed"]] for k, o in rows.items()
                  if o["reward"] != 1.0}
        assert failed == {}
        for o in rows.values():
            assert o["metrics"]["passed"] == o["metrics"]["total"] == o["metrics"]["parts"] == 1.0
            assert o["simworld"]["passed"] is True and o["error"] is None
            assert o["info"]["category"] == o["simworld"]["category"]

    def test_same_episode_as_simworld_run(self, reference_outputs: Run) -> None:
        """Each rollout's episode is the reference agent's under simworld run, byte for byte but the agent's name."""
        rows = _by_row(reference_outputs)
        for scenario, seed in suite_grid(None, "0..1"):
            _, line = run_one(scenario, seed, lambda sc=scenario, s=seed: _reference_agent(sc, s))
            ours = dict(rows[f"{scenario.id}__seed-{seed}"]["simworld"])
            assert ours.pop("agent") == "verifiers:scripted"
            assert ours.pop("hook_errors") == []  # run_one runs no hooks; simworld run and the integrations do
            assert ours == {k: v for k, v in orjson.loads(orjson.dumps(line)).items() if k != "agent"}, scenario.id

    def test_recovery_resumes_with_the_session_log(self, reference_outputs: Run) -> None:
        """In a recovery scenario the conversation restarts from the session log, with the restart note."""
        row = _by_row(reference_outputs)["recover-payment-after-crash__seed-0"]
        notes = [m["content"] for m in row["completion"] if m["role"] == "user"]
        assert notes == [RESUME_NOTE]
        assert row["simworld"]["passed"] is True and row["reward"] == 1.0

    def test_tools_are_simworlds(self) -> None:
        """The rows are the shared opening (the conversation's rules, then the policy) and the request; the tools are
        the scenario's, with simworld's own schemas."""
        env = load_environment(scenario="waive-small-fee", seeds="0..2")
        rows = env.get_dataset().to_list()
        assert len(rows) == 3
        for row, (scenario, seed) in zip(rows, env.grid, strict=True):
            first = Environment(scenario, seed).reset()
            assert [m["role"] for m in row["prompt"]] == ["system", "user"]
            assert (row["prompt"][0]["content"], row["prompt"][1]["content"]) == (system_text(first.policy),
                                                                                  first.request)
            assert json.loads(row["info"]) == {"scenario": scenario.id, "seed": seed, "split": "dev",
                                               "category": scenario.category}
            assert env.oai_tools == [{"type": "function", "function": t} for t in first.tools]

    def test_out_directory_exports(self, reference_outputs: Run) -> None:
        """With out=DIR the episodes are written as simworld run writes them, and simworld export reads them."""
        buffer = io.BytesIO()
        report = export_run(reference_outputs.out, "openai", buffer)
        assert report.written == len(suite_grid(None, "0..1"))
        first = orjson.loads(buffer.getvalue().splitlines()[0])
        assert first["messages"][0]["role"] == "system" and first["tools"]


    def test_groups_of_rollouts_as_grpo_samples_them(self, tmp_path: Path) -> None:
        """Several rollouts per row (a GRPO group) are separate episodes: each graded, each written as its own trial."""
        env = load_environment(scenario="waive-small-fee,split-yen-seven-ways", seeds=0, out=tmp_path)
        results = env.evaluate_sync(client=reference_client("0"), model="scripted",  # type: ignore[arg-type]
                                    rollouts_per_example=3, state_columns=["simworld"])
        outputs = results["outputs"]
        assert len(outputs) == 6 and all(o["reward"] == 1.0 for o in outputs)
        lines = [orjson.loads(b) for b in (tmp_path / "results.jsonl").read_bytes().splitlines()]
        assert sorted((x["scenario"], x["trial"]) for x in lines) == sorted(
            (s, t) for s in ("waive-small-fee", "split-yen-seven-ways") for t in range(3))

def _reference_agent(scenario: Any, seed: int) -> StepsAgent:
    env = Environment(scenario, seed)
    env.reset()
    return StepsAgent(scenario.solutions[0], dict(env.variables), scenario.id)


class TestNoTools:
    def test_a_model_that_never_calls_tools_fails_everything(self, silent_outputs: list[dict[str, Any]]) -> None:
        """A model that only talks gets reward 0 on every row: its episode stops at once, its tokens are counted."""
        for o in silent_outputs:
            line = o["simworld"]
            assert o["reward"] == 0.0 and o["metrics"]["passed"] == 0.0 and line["passed"] is False
            assert o["stop_condition"] == "answered_without_tools"
            assert line["stop_reason"] == "agent_stopped" and line["counters"]["tool_calls"] == 0
            assert (line["counters"]["input_tokens"], line["counters"]["output_tokens"]) == (7, 3)

    def test_parts_reward_pays_nothing_without_a_right_attempt(self) -> None:
        """reward="parts" is the shared definition (simworld._grading.rewards): a model that answers in words and
        calls no tool made no attempt, so it scores 0 however many parts an untouched world matches."""
        env = load_environment(scenario="waive-small-fee", seeds=0, reward="parts")
        (o,) = evaluate(env, silent_client())
        line = o["simworld"]
        assert o["reward"] == parts_reward(line) == 0.0 and sum(line["parts"].values()) > 0.0
        assert o["metrics"]["passed"] == 0.0 and o["metrics"]["total"] == 0.0


class TestEdges:
    def test_a_model_error_is_an_agent_error(self) -> None:
        """A client that fails ends the episode as agent_error (reward 0), never as a pass."""

        def boom(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
            raise ConnectionError("no network here")

        (o,) = evaluate(load_environment(scenario="waive-small-fee", seeds=0), ScriptedClient(boom))
        assert o["stop_condition"] == "has_error" and o["reward"] == 0.0
        assert o["simworld"]["stop_reason"] == "agent_error" and o["simworld"]["passed"] is False

    def test_a_model_error_is_recorded_in_out(self, tmp_path: Path) -> None:
        """A client that fails still leaves the episode's result line and event file in out (agent_error, named)."""

        def boom(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
            raise ConnectionError("no network here")

        evaluate(load_environment(scenario="waive-small-fee", seeds=0, out=tmp_path), ScriptedClient(boom))
        (line,) = [orjson.loads(raw) for raw in (tmp_path / "results.jsonl").read_bytes().splitlines()]
        assert line["stop_reason"] == "agent_error" and "ConnectionError" in line["error"]
        assert len(list((tmp_path / "events").glob("*.jsonl"))) == 1

    def test_the_models_words_are_said(self, tmp_path: Path) -> None:
        """The text beside a response's calls is a say event before its first call; a reply without calls is the
        model's last word, recorded, then the stop; exports carry both."""
        texts = iter(["Let me look at your fees.", "I could not waive it, sorry."])

        def reply(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
            if not any(m["role"] == "tool" for m in messages):
                return {"role": "assistant", "content": next(texts), "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "list_fees",
                                                                   "arguments": json.dumps({"plan_id": "pln_010"})}},
                    {"id": "c2", "type": "function", "function": {"name": "list_fees",
                                                                   "arguments": json.dumps({"plan_id": "pln_010"})}}]}
            return {"role": "assistant", "content": next(texts)}

        (o,) = evaluate(load_environment(scenario="waive-small-fee", seeds=0, out=tmp_path), ScriptedClient(reply))
        assert o["simworld"]["stop_reason"] == "agent_stopped" and o["simworld"]["outcome"] is None
        (path,) = (tmp_path / "events").glob("*.jsonl")
        events = [orjson.loads(raw) for raw in path.read_bytes().splitlines()[1:]]
        kinds = [(e.get("kind"), e.get("tool") or e.get("args", {}).get("text")) for e in events if "kind" in e]
        assert kinds == [("say", "Let me look at your fees."), ("read", "list_fees"), ("read", "list_fees"),
                         ("say", "I could not waive it, sorry.")]
        buffer = io.BytesIO()
        export_run(tmp_path, "openai", buffer)
        messages = orjson.loads(buffer.getvalue())["messages"]
        assert messages[2]["content"] == "Let me look at your fees." and messages[-1] == {
            "role": "assistant", "content": "I could not waive it, sorry."}

    def test_bad_arguments_and_calls_after_the_end(self) -> None:
        """Arguments that are not JSON are an invalid call the model reads; calls after a terminal one are not
        made; the episode's counters say so."""
        turns: list[list[dict[str, Any]]] = []

        def reply(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
            turns.append(messages)
            if len(turns) == 1:
                calls = [("c1", "list_fees", "{not json")]
            else:
                calls = [("c2", "escalate", json.dumps({"reason": "unsure"})), ("c3", "list_fees", "{}")]
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]}

        (o,) = evaluate(load_environment(scenario="waive-small-fee", seeds=0), ScriptedClient(reply))
        tool_messages = [m for m in o["completion"] if m["role"] == "tool"]
        assert json.loads(tool_messages[0]["content"])["status"] == "error"
        assert tool_messages[-1]["content"] == "The episode is over; this call was not made."
        assert o["stop_condition"] == "has_final_env_response"
        assert o["simworld"]["counters"]["steps"] == 2 and o["simworld"]["outcome"] == "escalate"

    def test_vf_load_environment_and_arguments(self) -> None:
        """verifiers' own loader finds the environment by module; bad arguments are one error naming them."""
        env = vf.load_environment("simworld.verifiers", scenario="waive-small-fee", seeds="0..1", split="holdout")
        assert isinstance(env, SimworldEnv) and len(env.get_dataset()) == 2
        assert all(json.loads(r["info"])["split"] == "holdout" for r in env.get_dataset().to_list())
        with pytest.raises(ScenarioError, match="total, passed, parts"):
            load_environment(seeds=0, reward="score")
        with pytest.raises(ScenarioError, match="seeds 'zero'"):
            load_environment(seeds="zero")


class TestReadme:
    def test_readme_example_runs(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The README's verifiers example runs as written."""
        exec(readme_example("# verifiers_example.py"), {})
        assert capsys.readouterr().out.splitlines()[-1] == "[0.0, 0.0] ['fees', 'fees']"
