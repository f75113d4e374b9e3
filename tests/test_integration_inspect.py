"""The Inspect AI task: the suite as samples, simworld's tools, simworld's graders as the scorer (offline, mockllm)."""

from __future__ import annotations

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
from simworld._edges.export import export_run
from simworld._edges.inspect import suite
from simworld._edges.session import suite_grid
from simworld._episode.environment import Environment
from simworld._episode.episode import Observation
from simworld._episode.steps import StepsAgent
from simworld._running.runner import run_one

SEEDS = "0..1"
SEED_LIST = (0, 1)
SCORER = "simworld_scorer"
#: Zero usage on every mock output: Inspect then counts no tokens itself (nothing is fetched to count them).
NO_USAGE = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
Generate = Callable[[list[ChatMessage], list[ToolInfo], ToolChoice, GenerateConfig], ModelOutput]


def reference_model(seeds: str = SEEDS) -> Model:
    """A mock model that replays each sample's reference solution, reading results back from the conversation.

    A sample is known by its system and user messages (the policy and the request at its seed). Two seeds of a
    scenario may read alike over different worlds (a BHD plan told apart only by its amounts), so the grid is
    one seed per eval, where the messages name the sample.
    """
    index: dict[tuple[str, str], tuple[Any, dict[str, Any], str]] = {}
    for scenario, seed in suite_grid(None, seeds):
        env = Environment(scenario, seed)
        first = env.reset()
        key = (first.policy, first.request)
        world = (scenario, dict(env.variables), scenario.instance(seed).state.hash)
        assert key not in index, (scenario.id, seed)
        index[key] = world

    def generate(messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice,
                 config: GenerateConfig) -> ModelOutput:
        scenario, variables, _ = index[(messages[0].text, messages[1].text)]
        results = [orjson.loads(m.text) for m in messages if m.role == "tool"]
        agent = StepsAgent(scenario.solutions[0], variables, scenario.id)
        seen = Observation("", "", (), 0, "", resumed=True, history=tuple({"result": r} for r in results))
        action = agent.act(seen)
        if action is None:
            output = ModelOutput.from_content("mockllm/model", "Done.")
        else:
            output = ModelOutput.for_tool_call("mockllm/model", action["tool"], action["args"],
                                               tool_call_id=f"call_{len(results)}")
        output.usage = NO_USAGE
        return output

    return get_model("mockllm/model", custom_outputs=generate)


def silent_model() -> Model:
    """A mock model that never calls a tool: it answers in words."""

    def generate(messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice,
                 config: GenerateConfig) -> ModelOutput:
        output = ModelOutput.from_content("mockllm/model", "I have looked into it and all is well.")
        output.usage = ModelUsage(input_tokens=7, output_tokens=3, total_tokens=10)
        return output

    return get_model("mockllm/model", custom_outputs=generate)


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
    logs = Logs(run_eval(tmp, reference_model(str(n)), seeds=n, out=str(tmp / "run")) for n in SEED_LIST)
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
            assert ours.pop("agent") == "inspect:mockllm/model"
            assert ours.pop("hook_errors") == []  # run_one runs no hooks; simworld run and Inspect do
            expected = {k: v for k, v in orjson.loads(orjson.dumps(line)).items() if k != "agent"}
            assert ours == expected, scenario.id

    def test_scores_and_metrics_in_the_eval_log(self, reference_logs: Logs) -> None:
        """The .eval file on disk carries passed, total, per-part scores and the category of every sample."""
        infos = list_eval_logs(str(reference_logs.tmp / "logs"))
        assert len(infos) == len(SEED_LIST) and all(i.name.endswith(".eval") for i in infos)
        for info in infos:
            self._check_stored(read_eval_log(info))

    def _check_stored(self, stored: EvalLog) -> None:
        assert stored.results is not None
        metrics = {s.name: s.metrics["mean"].value for s in stored.results.scores}
        assert metrics == {"passed": 1.0, "total": 1.0}
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
        assert {s.name: s.metrics["mean"].value for s in silent_log.results.scores}["passed"] == 0.0


class TestTaskArguments:
    def test_inspect_eval_cli_finds_the_task_and_reads_its_arguments(self, tmp_path: Path) -> None:
        """The README's `inspect eval simworld/suite -T scenario=... -T seeds=0..1` runs the named samples (the
        task is found through simworld's entry point)."""
        import re
        import shlex

        readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
        (command,) = re.findall(r"^inspect eval simworld/suite .*$", readme, flags=re.M)
        argv = shlex.split(command)
        assert argv[:2] == ["inspect", "eval"]
        done = subprocess.run([sys.executable, "-m", "inspect_ai", *argv[1:], "--log-dir", str(tmp_path),
                               "--display", "none"], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)  # a user's own folder: the checkout's simworld/ is not a task path
        assert done.returncode == 0, done.stdout + done.stderr
        (info,) = list_eval_logs(str(tmp_path))
        log = read_eval_log(info)
        assert log.samples is not None
        assert sorted(str(s.id) for s in log.samples) == ["split-balance-three-ways__seed-0",
                                                          "split-balance-three-ways__seed-1",
                                                          "waive-small-fee__seed-0", "waive-small-fee__seed-1"]
        args = log.eval.task_args
        # Inspect's CLI reads a comma list as a list; the task takes either.
        assert (args["scenario"], args["seeds"]) == (["waive-small-fee", "split-balance-three-ways"], "0..1")

    def test_holdout_split_and_bad_arguments(self) -> None:
        """split=holdout gives each scenario's reserved seeds; a bad seed list is one error naming it."""
        from simworld._world.splits import HOLDOUT_BASE
        from simworld.errors import ScenarioError

        task = suite(scenario="waive-small-fee", seeds=[0, 1], split="holdout")
        seeds = [s.metadata["seed"] for s in task.dataset]  # type: ignore[index]
        assert len(seeds) == 2 and all(n >= HOLDOUT_BASE for n in seeds)
        with pytest.raises(ScenarioError, match="seeds 'zero'"):
            suite(seeds="zero")
