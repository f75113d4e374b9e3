"""`simworld grade RUN_DIR`: re-grading recorded episodes without running the agent again."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from helpers import simworld

ROOT = Path(__file__).resolve().parent.parent



class TestRegrade:
    @pytest.mark.parametrize("agent", ["reference", "random", "noop"])
    def test_same_graders_same_bytes(self, tmp_path: Path, agent: str) -> None:
        """Re-grading a run with unchanged graders writes exactly the run's results.jsonl."""
        run = tmp_path / "run"
        assert simworld("run", "--seed", "4", "--agent", agent, "--out", str(run)).returncode in (0, 1)
        done = simworld("grade", str(run))
        assert done.returncode == 0, done.stderr
        assert (run / "regraded.jsonl").read_bytes() == (run / "results.jsonl").read_bytes()

    def test_new_grader_same_episodes(self, tmp_path: Path) -> None:
        """A grader added after the run judges the recorded episodes: the agent is not run again."""
        shutil.copytree(ROOT / "scenarios" / "waive-small-fee", tmp_path / "scenarios" / "waive-small-fee")
        shutil.copytree(ROOT / "snapshots", tmp_path / "snapshots")
        suite = tmp_path / "scenarios"
        run = tmp_path / "run"
        assert simworld("run", "--suite", str(suite), "--out", str(run)).returncode == 0
        (tmp_path / "strict_graders.py").write_text(
            "from simworld.verdict import Check, Verdict\n"
            "def at_most_two_calls(episode, limit):\n"
            "    n = len(episode.events)\n"
            "    return Verdict.from_checks([Check('at_most_two_calls', n <= limit, f'{n} calls')])\n")
        task = suite / "waive-small-fee" / "task.json"
        data = orjson.loads(task.read_bytes())
        data["graders"] = [{"grader": "strict_graders:at_most_two_calls", "args": {"limit": 2}}]
        task.write_bytes(orjson.dumps(data))
        done = simworld("grade", str(run), "--suite", str(suite), "--out", str(tmp_path / "new.jsonl"))
        assert done.returncode == 0, done.stderr
        (line,) = (tmp_path / "new.jsonl").read_bytes().splitlines()
        result = orjson.loads(line)
        assert not result["passed"]
        assert {"name": "at_most_two_calls", "passed": False, "detail": "4 calls"} in result["checks"]
        assert result["events_hash"] == orjson.loads((run / "results.jsonl").read_bytes())["events_hash"]

    def test_not_a_run_dir(self, tmp_path: Path) -> None:
        """A directory without events/ is one clear error line, exit 2."""
        done = simworld("grade", str(tmp_path))
        assert done.returncode == 2 and "events/" in done.stderr and "Traceback" not in done.stderr
