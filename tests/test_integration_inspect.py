"""The Inspect AI task: the suite as samples, simworld's tools, simworld's graders as the scorer (offline, mockllm)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, list_eval_logs, read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, Model, ModelOutput, ModelUsage, get_model
from inspect_ai.tool import ToolChoice, ToolInfo

from simworld._agents.chat import RESUME_NOTE
from simworld._edges import inspect as sw_inspect
from simworld._edges.export import export_run
from simworld._edges.inspect import suite
from simworld._edges.inspect_models import NOOP_REPLY
from simworld._edges.session import suite_grid
from simworld._episode.contract import system_text
from simworld._episode.environment import Environment
from simworld._episode.steps import StepsAgent
from simworld._running.runner import run_one

SEEDS = "0..1"
SCORER = "simworld_scorer"
Generate = Callable[[list[ChatMessage], list[ToolInfo], ToolChoice, GenerateConfig], ModelOutput]


def silent_model() -> Model:
    """A mock model that never calls a tool: it answers in words."""

    def generate(messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice,
                 config: GenerateConfig) -> ModelOutput:
        output = ModelOutput.from_content("mockllm/model", "I have looked into it and all is well.")
        output.usage = ModelUsage(input_tokens=7, output_tokens=3, total_tokens=10)
        return output

    return get_model("mockllm/model", custom_outputs=generate)


def _pass_hat(metrics: dict[str, Any]) -> dict[str, Any]:
    """The pass^k metrics, named without the package prefix Inspect adds when simworld is installed (not when it
    is imported from a source tree, as in this project's own tests)."""
    return {k.removeprefix("simworld/"): v for k, v in metrics.items() if "pass^" in k}


def run_eval(tmp: Path, model: Model, **task_args: Any) -> EvalLog:
    (log,) = inspect_eval(suite(**task_args), model=model, log_dir=str(tmp / "logs"), display="none",
                          log_format="eval")
    assert log.status == "success", log.error
    return log


class Logs(list[EvalLog]):
    """The reference evals (one per seed) and the directory they wrote to."""

    tmp: Path


@pytest.fixture(scope="module")
def reference_logs(tmp_path_factory: pytest.TempPathFactory) -> Logs:
    tmp = tmp_path_factory.mktemp("inspect-reference")
    logs = Logs([run_eval(tmp, get_model("simworld/reference"), seeds=SEEDS, out=str(tmp / "run"))])
    logs.tmp = tmp
    return logs


@pytest.fixture(scope="module")
def silent_log(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    return run_eval(tmp_path_factory.mktemp("inspect-silent"), silent_model(), seeds=SEEDS)


def _lines(*logs: EvalLog) -> dict[str, dict[str, Any]]:
    out = {}
    for log in logs:
        assert log.samples is not None
        out.update({str(s.id): s.scores[SCORER].metadata for s in log.samples if s.scores})  # type: ignore[misc]
    return out


class TestReference:
    def test_reference_passes_every_scenario(self, reference_logs: Logs) -> None:
        """A mock replaying each reference solution passes every (scenario, seed), recovery scenarios included."""
        lines = _lines(*reference_logs)
        grid = suite_grid(None, SEEDS)
        assert sorted(lines) == sorted(f"{s.id}__seed-{n}" for s, n in grid)
        assert any(s.id.startswith("recover-") for s, _ in grid)
        failed = {k: [c for c in v["checks"] if not c["passed"]] for k, v in lines.items() if not v["passed"]}
        assert failed == {}
        assert all(v["total"] == 1.0 for v in lines.values())

    def test_same_episode_as_simworld_run(self, reference_logs: Logs) -> None:
        """Each sample's episode is the reference agent's under simworld run, byte for byte but for the agent's name."""
        lines = _lines(*reference_logs)
        for scenario, seed in suite_grid(None, SEEDS):
            _, line = run_one(scenario, seed, lambda sc=scenario, s=seed: _reference_agent(sc, s))
            ours = dict(lines[f"{scenario.id}__seed-{seed}"])
            assert ours.pop("agent") == "inspect:simworld/reference"
            assert ours.pop("hook_errors") == []  # run_one runs no hooks; simworld run and Inspect do
            expected = {k: v for k, v in orjson.loads(orjson.dumps(line)).items() if k != "agent"}
            assert ours == expected, scenario.id

    def test_scores_and_metrics_in_the_eval_log(self, reference_logs: Logs) -> None:
        """The .eval file on disk carries passed, total, per-part scores and the category of every sample."""
        infos = list_eval_logs(str(reference_logs.tmp / "logs"))
        assert len(infos) == 1 and all(i.name.endswith(".eval") for i in infos)
        for info in infos:
            self._check_stored(read_eval_log(info))

    def _check_stored(self, stored: EvalLog) -> None:
        assert stored.results is not None
        metrics = {s.name: {k: m.value for k, m in s.metrics.items()} for s in stored.results.scores}
        categories = {s.category for s, _ in suite_grid(None, SEEDS)}
        assert metrics["passed"]["accuracy"] == 1.0 and metrics["total"]["mean"] == 1.0
        assert _pass_hat(metrics["passed"]) == {"pass^k_pass^1": 1.0}
        assert {k for k in metrics["total"] if k.startswith("grouped_")} == {f"grouped_{c}" for c in categories}
        assert stored.samples is not None
        for sample in stored.samples:
            score = sample.scores[SCORER]  # type: ignore[index]
            assert score.value == {"passed": 1.0, "total": 1.0}
            meta = score.metadata
            assert meta is not None and meta["passed"] is True and meta["total"] == 1.0
            assert set(meta["parts"]) >= {"outcome", "state"} and all(v == 1.0 for v in meta["parts"].values())
            assert meta["category"] == sample.metadata["category"]
            assert (meta["scenario"], meta["seed"]) == (sample.metadata["scenario"], sample.metadata["seed"])

    def test_recovery_resumes_with_the_session_log(self, reference_logs: Logs) -> None:
        """In a recovery scenario the conversation restarts from the session log, with the restart note."""
        log = reference_logs[0]
        assert log.samples is not None
        sample = next(s for s in log.samples if str(s.id).startswith("recover-payment-after-crash"))
        texts = [m.text for m in sample.messages if m.role == "user"]
        assert texts[-1] == RESUME_NOTE
        assert sample.scores[SCORER].metadata["passed"] is True  # type: ignore[index]

    def test_out_directory_exports(self, reference_logs: Logs) -> None:
        """With out=DIR the episodes are written as simworld run writes them, and simworld export reads them."""
        import io

        buffer = io.BytesIO()
        report = export_run(reference_logs.tmp / "run", "openai", buffer)
        assert report.written == len(suite_grid(None, SEEDS))
        first = orjson.loads(buffer.getvalue().splitlines()[0])
        assert first["messages"][0]["role"] == "system" and first["tools"]


def _reference_agent(scenario: Any, seed: int) -> StepsAgent:
    env = Environment(scenario, seed)
    env.reset()
    return StepsAgent(scenario.solutions[0], dict(env.variables), scenario.id)


class TestNoTools:
    def test_a_model_that_never_calls_tools_fails_everything(self, silent_log: EvalLog) -> None:
        """A model that only talks fails every scenario; its episodes stop at once and its tokens are counted."""
        lines = _lines(silent_log)
        assert len(lines) == len(suite_grid(None, SEEDS))
        assert not any(v["passed"] for v in lines.values())
        assert all(v["stop_reason"] == "agent_stopped" and v["counters"]["tool_calls"] == 0 for v in lines.values())
        assert all(v["counters"]["input_tokens"] == 7 and v["counters"]["output_tokens"] == 3
                   for v in lines.values())
        assert silent_log.results is not None
        assert {s.name: s.metrics["accuracy"].value for s in silent_log.results.scores
                if "accuracy" in s.metrics}["passed"] == 0.0


class TestTaskArguments:
    def test_readme_command_runs_offline(self, tmp_path: Path) -> None:
        """The README's `inspect eval simworld/suite --model simworld/reference ...` runs with no network: the log's
        status is success, every sample passes, and its out folder is a complete run that report reads."""
        import re
        import shlex

        from helpers import docs_text

        (command,) = set(re.findall(r"^inspect eval simworld/suite .*$", docs_text(), flags=re.M))
        argv = shlex.split(command)
        assert argv[:2] == ["inspect", "eval"] and "simworld/reference" in argv
        log = _cli_eval(tmp_path, argv[1:])
        assert log.samples is not None
        assert sorted(str(s.id) for s in log.samples) == ["split-balance-three-ways__seed-0",
                                                          "split-balance-three-ways__seed-1",
                                                          "waive-small-fee__seed-0", "waive-small-fee__seed-1"]
        assert all(s.scores[SCORER].value == {"passed": 1.0, "total": 1.0} for s in log.samples)  # type: ignore[index]
        args = log.eval.task_args
        # Inspect's CLI reads a comma list as a list; the task takes either.
        assert (args["scenario"], args["seeds"]) == (["waive-small-fee", "split-balance-three-ways"], "0..1")
        out = tmp_path / args["out"]
        meta = orjson.loads((out / "run.json").read_bytes())
        assert (meta["status"], meta["agent"], meta["seeds"], meta["split"], meta["trials"]) == (
            "complete", "inspect:simworld/reference", [0, 1], "dev", 1)
        assert meta["scenarios"] == ["waive-small-fee", "split-balance-three-ways"] and meta["passed"] == 4
        report = subprocess.run([sys.executable, "-m", "simworld", "report", str(out)], capture_output=True,
                                text=True, timeout=120)
        assert "seeds 0,1, split dev; status complete" in report.stdout, report.stdout + report.stderr

    def test_noop_model_runs_offline_and_fails_everything(self, tmp_path: Path) -> None:
        """`--model simworld/noop` replies in words: the eval succeeds, no sample passes, each reply is recorded."""
        log = _cli_eval(tmp_path, ["eval", "simworld/suite", "--model", "simworld/noop", "-T",
                                   "scenario=waive-small-fee", "-T", "seeds=0..1", "-T", "out=run"])
        assert log.samples is not None and len(log.samples) == 2
        lines = _lines(log)
        assert not any(v["passed"] for v in lines.values())
        assert all(v["stop_reason"] == "agent_stopped" and v["outcome"] is None for v in lines.values())
        (event_file, _) = sorted((tmp_path / "run" / "events").glob("*.jsonl"))
        said = [e for e in map(orjson.loads, event_file.read_bytes().splitlines()[1:]) if e.get("kind") == "say"]
        assert [e["args"]["text"] for e in said] == [NOOP_REPLY]

    def test_holdout_split_and_bad_arguments(self) -> None:
        """split=holdout gives each scenario's reserved seeds; a bad seed list is one error naming it."""
        from simworld._world.splits import HOLDOUT_BASE
        from simworld.errors import ScenarioError

        task = suite(scenario="waive-small-fee", seeds=[0, 1], split="holdout")
        seeds = [s.metadata["seed"] for s in task.dataset]  # type: ignore[index]
        assert len(seeds) == 2 and all(n >= HOLDOUT_BASE for n in seeds)
        with pytest.raises(ScenarioError, match="seeds 'zero'"):
            suite(seeds="zero")


def _cli_eval(tmp_path: Path, args: list[str]) -> EvalLog:
    """Run `inspect eval ...` as a user would (in their own folder, no network), and read its one log."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9", NO_PROXY="")  # nothing reachable
    done = subprocess.run([sys.executable, "-m", "inspect_ai", *args, "--log-dir", str(tmp_path / "logs"),
                           "--display", "none"], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    (info,) = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info)
    assert log.status == "success", (log.error, done.stderr[-2000:])
    return log


def _out_lines(out: Path) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for raw in (out / "results.jsonl").read_bytes().splitlines()]


def _events(out: Path) -> list[dict[str, Any]]:
    (path,) = (out / "events").glob("*.jsonl")
    return [e for e in map(orjson.loads, path.read_bytes().splitlines()[1:]) if "kind" in e]


class TestTheModelsWords:
    def test_text_beside_calls_and_a_final_reply_are_said(self, tmp_path: Path) -> None:
        """The text of a response with calls is a say event before its first call; a reply with no call is the
        model's last word, recorded, then the stop. The system message is the shared opening."""
        shown: list[str] = []

        def generate(messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice,
                     config: GenerateConfig) -> ModelOutput:
            shown.append(messages[0].text)
            if not any(m.role == "tool" for m in messages):
                output = ModelOutput.for_tool_call("mockllm/model", "list_fees", {"plan_id": "pln_010"},
                                                   content="Let me look at your fees.")
            else:
                output = ModelOutput.from_content("mockllm/model", "I could not waive it, sorry.")
            output.usage = ModelUsage(input_tokens=5, output_tokens=2, total_tokens=7)
            return output

        log = run_eval(tmp_path, get_model("mockllm/model", custom_outputs=generate), scenario="waive-small-fee",
                       seeds=0, out=str(tmp_path / "run"))
        (line,) = _lines(log).values()
        assert line["stop_reason"] == "agent_stopped" and line["counters"]["input_tokens"] == 10
        first = Environment(*suite_grid("waive-small-fee", 0)[0]).reset()
        assert shown[0] == system_text(first.policy)
        said = [(e["kind"], e["tool"] or e["args"]["text"]) for e in _events(tmp_path / "run")]
        assert said == [("say", "Let me look at your fees."), ("read", "list_fees"),
                        ("say", "I could not waive it, sorry.")]


class TestNeverLosesAnEpisode:
    def test_a_model_error_is_recorded_as_agent_error(self, tmp_path: Path) -> None:
        """When the model provider raises, Inspect errs the sample, and simworld still writes its episode
        (agent_error, naming the error) and releases it."""
        calls = iter(range(100))

        def generate(messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice,
                     config: GenerateConfig) -> ModelOutput:
            if next(calls) >= 1:
                raise ConnectionError("the provider is down")
            output = ModelOutput.for_tool_call("mockllm/model", "list_fees", {"plan_id": "pln_010"}, content="")
            output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
            return output

        (log,) = inspect_eval(suite(scenario="waive-small-fee", seeds=0, out=str(tmp_path / "run")),
                              model=get_model("mockllm/model", custom_outputs=generate),
                              log_dir=str(tmp_path / "logs"), display="none")
        assert log.status == "error"
        (line,) = _out_lines(tmp_path / "run")
        assert line["stop_reason"] == "agent_error" and line["passed"] is False
        assert line["error"] == "inspect: the model raised ConnectionError: the provider is down"
        assert [e["tool"] for e in _events(tmp_path / "run")] == ["list_fees"]
        assert sw_inspect._LIVE == {}
        meta = orjson.loads((tmp_path / "run" / "run.json").read_bytes())
        assert meta["status"] == "complete" and meta["inspect_status"] == "error" and meta["episodes"] == 1

    def test_a_time_limit_is_a_timeout(self, tmp_path: Path) -> None:
        """When Inspect's time limit stops the agent, the sample is scored and its episode ends as timeout."""
        import time

        def generate(messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice,
                     config: GenerateConfig) -> ModelOutput:
            time.sleep(1.2)  # past the limit: the next await is cancelled
            output = ModelOutput.for_tool_call("mockllm/model", "list_fees", {"plan_id": "pln_010"}, content="")
            output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
            return output

        (log,) = inspect_eval(suite(scenario="waive-small-fee", seeds=0, out=str(tmp_path / "run")),
                              model=get_model("mockllm/model", custom_outputs=generate), time_limit=1,
                              log_dir=str(tmp_path / "logs"), display="none")
        (line,) = _out_lines(tmp_path / "run")
        assert line["stop_reason"] == "timeout" and "time limit" in line["error"]
        assert log.samples is not None and log.samples[0].scores[SCORER].metadata["stop_reason"] == "timeout"  # type: ignore[index]
        assert sw_inspect._LIVE == {}

    def test_epochs_are_trials_with_pass_hat_k(self, tmp_path: Path) -> None:
        """Inspect's epochs are simworld's trials: pass^k in the metrics and run.json, one line per epoch."""
        (log,) = inspect_eval(suite(scenario="waive-small-fee", seeds=0, out=str(tmp_path / "run")),
                              model=get_model("simworld/reference"), epochs=2, log_dir=str(tmp_path / "logs"),
                              display="none")
        assert log.status == "success" and log.results is not None
        passed = next(s for s in log.results.scores if s.name == "passed")
        assert _pass_hat({k: m.value for k, m in passed.metrics.items()}) == {
            "pass^k_pass^1": 1.0, "pass^k_pass^2": 1.0}
        assert [(x["seed"], x["trial"]) for x in _out_lines(tmp_path / "run")] == [(0, 0), (0, 1)]
        meta = orjson.loads((tmp_path / "run" / "run.json").read_bytes())
        assert meta["trials"] == 2 and meta["pass_hat_k"] == {"pass^1": 1.0, "pass^2": 1.0}
