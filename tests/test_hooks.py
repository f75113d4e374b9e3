"""Hooks in task.json: pre_grade checks join the conjunction; post_run hooks see each graded episode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from helpers import copy_suite

ROOT = Path(__file__).resolve().parent.parent

HOOKS = '''
import json
from pathlib import Path
from simworld.verdict import Check, Verdict

def no_messages(episode):
    sent = [e for e in episode.events if e.tool == "send_message"]
    return Verdict.from_checks([Check("no_messages", not sent, f"{len(sent)} message(s)")])

def write_line(episode, result, out_dir):
    with open(Path(out_dir) / "trajectories.jsonl", "a") as f:
        f.write(json.dumps({"scenario": episode.scenario, "calls": len(episode.events),
                            "passed": result["passed"]}) + "\\n")

def explode(episode, result, out_dir):
    raise RuntimeError("hook bug")
'''


def _suite(tmp_path: Path, hooks: dict) -> Path:
    (tmp_path / "suite_hooks.py").write_text(HOOKS)
    return copy_suite(tmp_path, "waive-small-fee", hooks=hooks)


def _run(suite: Path, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    done = subprocess.run([sys.executable, "-m", "simworld", "run", "--suite", str(suite), "--out", str(out), *extra],
                          capture_output=True, text=True, cwd=suite.parent)
    (line,) = (out / "results.jsonl").read_bytes().splitlines()
    return done, orjson.loads(line)


class TestPreGrade:
    def test_pre_grade_joins_the_conjunction(self, tmp_path: Path) -> None:
        """A pre_grade check that fails makes an otherwise correct episode fail, and is reported."""
        suite = _suite(tmp_path, {"pre_grade": ["suite_hooks:no_messages"]})
        done, result = _run(suite, tmp_path / "ok")
        assert done.returncode == 0 and result["passed"]
        script = tmp_path / "s.jsonl"
        lines = (suite / "waive-small-fee" / "solution.jsonl").read_text().splitlines()
        message = '{"tool": "send_message", "args": {"customer_id": "{customer_id}", "subject": "s", "body": "b"}}'
        script.write_text("\n".join(lines[:-1] + [message, lines[-1]]) + "\n")
        done, result = _run(suite, tmp_path / "msg", "--agent", f"scripted:{script}")
        assert done.returncode == 1 and not result["passed"]
        assert {"name": "no_messages", "passed": False, "detail": "1 message(s)"} in result["checks"]
        assert result["parts"]["custom"] == 0.0


class TestPostRun:
    def test_post_run_sees_each_episode(self, tmp_path: Path) -> None:
        """A post_run hook is called with the episode, its result and the run directory."""
        suite = _suite(tmp_path, {"post_run": ["suite_hooks:write_line"]})
        done, result = _run(suite, tmp_path / "out")
        assert done.returncode == 0 and result["hook_errors"] == []
        lines = (tmp_path / "out" / "trajectories.jsonl").read_text().splitlines()
        assert [orjson.loads(x) for x in lines] == [{"scenario": "waive-small-fee", "calls": 4, "passed": True}]

    def test_failing_hook_is_recorded_not_fatal(self, tmp_path: Path) -> None:
        """A post_run hook that raises is recorded in hook_errors; the episode and its grade are kept."""
        suite = _suite(tmp_path, {"post_run": ["suite_hooks:explode"]})
        done, result = _run(suite, tmp_path / "out")
        assert done.returncode == 0 and result["passed"]
        assert result["hook_errors"] == ["suite_hooks:explode raised RuntimeError: hook bug"]

    def test_unimportable_hook_fails_at_load(self, tmp_path: Path) -> None:
        """A post_run hook that cannot be imported fails the scenario's load, naming it."""
        suite = _suite(tmp_path, {"post_run": ["suite_hooks:nothing_here"]})
        done = subprocess.run([sys.executable, "-m", "simworld", "list", "--suite", str(suite)], capture_output=True,
                              text=True)
        assert done.returncode == 2 and "nothing_here" in done.stderr and "hooks.post_run[0]" in done.stderr
