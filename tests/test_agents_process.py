"""Agents in other processes (cmd:), trials with pass^k, and concurrency that changes no result."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest
from helpers import copy_suite, simworld

from simworld._running.rundir import pass_hat_k

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent.py"



def _results(out: Path) -> list[dict]:
    return [orjson.loads(x) for x in (out / "results.jsonl").read_bytes().splitlines()]


def _quick_suite(tmp_path: Path, timeout_s: float) -> Path:
    """Two scenarios with a short real-time budget, so a hanging agent is cut off quickly."""
    return copy_suite(tmp_path, "waive-small-fee", "split-balance-three-ways",
                      budget={"max_steps": 20, "timeout_s": timeout_s})


class TestExampleAgent:
    @pytest.mark.parametrize("seed", ["0", "7"])
    def test_example_process_agent_passes(self, tmp_path: Path, seed: str) -> None:
        """examples/agent.py, a separate process speaking JSON lines, passes the split scenario."""
        done = simworld("run", "--agent", f"cmd:{sys.executable} {EXAMPLE}", "--scenario", "split-balance-three-ways",
                        "--seed", seed, "--out", str(tmp_path))
        assert done.returncode == 0, done.stdout + done.stderr
        (r,) = _results(tmp_path)
        assert r["passed"] and r["counters"]["tool_calls"] == 6


MISBEHAVING = {
    "crash": ("import sys\nsys.stdin.readline()\nprint('boom', file=sys.stderr)\nsys.exit(3)\n",
              "agent_error", "exited with code 3", "boom"),
    "hang": ("import sys, time, subprocess\nsys.stdin.readline()\nsubprocess.Popen(['sleep', '{marker}'])\n"
             "time.sleep(120)\n", "timeout", "no action within", "killed"),
    "closes-stdout": ("import os, sys, time\nsys.stdin.readline()\nos.close(1)\ntime.sleep(120)\n",
                      "agent_error", "closed its stdout without an action (it had not exited)", "it was stopped"),
    "garbage": ("import sys\nsys.stdin.readline()\nprint('let me think about it', flush=True)\nsys.stdin.readline()\n",
                "agent_error", "not JSON", "let me think"),
}


class TestMisbehavingProcesses:
    @pytest.mark.parametrize("kind", sorted(MISBEHAVING))
    def test_recorded_as_errored_and_the_run_goes_on(self, tmp_path: Path, kind: str) -> None:
        """A crashing or garbage-printing agent is recorded as errored, a hanging one as timed out, each with the
        reason; every episode of the run is still recorded; no process is left behind."""
        marker = str(1000 + uuid.uuid4().int % 8000)
        source, stop_reason, reason, detail = MISBEHAVING[kind]
        agent = tmp_path / f"{kind}.py"
        agent.write_text(source.replace("{marker}", marker))
        suite = _quick_suite(tmp_path, timeout_s=1.5)
        done = simworld("run", "--suite", str(suite), "--agent", f"cmd:{sys.executable} {agent}",
                        "--out", str(tmp_path / "out"))
        assert done.returncode == 1, done.stderr
        results = _results(tmp_path / "out")
        assert len(results) == 2
        for r in results:
            assert r["stop_reason"] == stop_reason and not r["passed"] and r["total"] == 0.0
            assert reason in r["error"] and detail in r["error"]
            assert "code -" not in r["error"]  # never the code of simworld's own kill
        left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
        assert left.stdout.strip() == "", "a child of the agent was left running"

    def test_missing_command(self, tmp_path: Path) -> None:
        """A command that does not exist is an errored episode naming it, not a crash of the run."""
        done = simworld("run", "--agent", "cmd:no-such-agent-binary-xyz", "--scenario", "waive-small-fee",
                        "--out", str(tmp_path))
        (r,) = _results(tmp_path)
        assert done.returncode == 1 and r["stop_reason"] == "agent_error" and "no-such-agent-binary-xyz" in r["error"]

    def test_wrong_shape_is_an_error_result_the_agent_reads(self, tmp_path: Path) -> None:
        """A JSON line of the wrong shape is not fatal: it comes back to the agent as an error result."""
        agent = tmp_path / "shape.py"
        agent.write_text("import sys, json\nfor i, line in enumerate(sys.stdin):\n"
                         "    obs = json.loads(line)\n    if obs.get('type') == 'end': break\n"
                         "    out = [1, 2] if i == 0 else {'tool': 'decline', 'args': {'reason': obs['last_status']}}\n"
                         "    print(json.dumps(out), flush=True)\n")
        simworld("run", "--agent", f"cmd:{sys.executable} {agent}", "--scenario", "waive-small-fee",
                 "--out", str(tmp_path / "o"))
        (r,) = _results(tmp_path / "o")
        assert r["outcome"] == "decline" and r["counters"]["error_calls"] == 1


class TestTrials:
    def test_pass_hat_k_formula(self) -> None:
        """pass^k is the mean over tasks of C(c, k) / C(n, k)."""
        assert pass_hat_k([3, 1, 0], 3) == {"pass^1": round(4 / 9, 6), "pass^2": round(1 / 3, 6),
                                            "pass^3": round(1 / 3, 6)}
        assert pass_hat_k([2], 4) == {"pass^1": 0.5, "pass^2": round(1 / 6, 6), "pass^3": 0.0, "pass^4": 0.0}

    def test_flaky_agent_over_trials(self, tmp_path: Path) -> None:
        """--trials K runs each task K times and reports per-task successes and pass^k."""
        (tmp_path / "flaky.py").write_text(
            "import itertools\nfrom simworld.agents import StepsAgent\nfrom simworld.scenario import load_suite\n"
            "COUNT = itertools.count()\nSC = load_suite(None, ['waive-small-fee'])[0]\n"
            "class Flaky:\n    def __init__(self):\n        self.n = next(COUNT)\n"
            "        self.inner = StepsAgent(SC.solutions[0], dict(SC.instance(0).vars), 'x')\n"
            "    def act(self, obs):\n        if self.n % 2:\n            return None\n"
            "        return self.inner.act(obs)\n")
        done = simworld("run", "--agent", "python:flaky:Flaky", "--scenario", "waive-small-fee", "--trials", "4",
                        "--out", "o", cwd=tmp_path)
        assert done.returncode == 1
        meta = orjson.loads((tmp_path / "o" / "run.json").read_bytes())
        assert meta["tasks"] == [{"scenario": "waive-small-fee", "seed": 0, "successes": 2, "trials": 4}]
        assert meta["pass_hat_k"]["pass^1"] == 0.5 and meta["pass_hat_k"]["pass^2"] == round(1 / 6, 6)
        assert [r["trial"] for r in _results(tmp_path / "o")] == [0, 1, 2, 3]
        assert re.search(r"^2 +0\.167$", done.stdout, re.M) and "waive-small-fee@0 2/4" in done.stdout
        assert len(list((tmp_path / "o" / "events").iterdir())) == 4


class TestConcurrency:
    @pytest.mark.parametrize("agent", ["reference", "random"])
    def test_concurrency_changes_no_result(self, tmp_path: Path, agent: str) -> None:
        """--concurrency 4 writes the same results and event logs as one episode at a time."""
        a, b = tmp_path / "a", tmp_path / "b"
        assert simworld("run", "--agent", agent, "--seed", "5", "--trials", "2", "--out", str(a)).returncode in (0, 1)
        assert simworld("run", "--agent", agent, "--seed", "5", "--trials", "2", "--concurrency", "4",
                        "--out", str(b)).returncode in (0, 1)
        assert (a / "results.jsonl").read_bytes() == (b / "results.jsonl").read_bytes()
        names = sorted(p.name for p in (a / "events").iterdir())
        assert names == sorted(p.name for p in (b / "events").iterdir())
        for name in names:
            assert (a / "events" / name).read_bytes() == (b / "events" / name).read_bytes()

    def test_bad_counts(self) -> None:
        """--trials 0 or --concurrency 0 is one clear error."""
        done = simworld("run", "--trials", "0")
        assert done.returncode == 2 and "--trials" in done.stderr
