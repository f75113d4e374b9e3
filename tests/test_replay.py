"""Replay: the event log rebuilds the world and confirms the final state hash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from simworld._agents.kinds import build_agent_factory
from simworld._episode.replay import replay
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_suite
from simworld.errors import ReplayError


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run")
    run_suite(load_suite(), [11], "reference", build_agent_factory("reference"), out)
    return out


class TestReplay:
    def test_every_episode_replays(self, run_dir: Path) -> None:
        """Every event log of a reference run replays to its recorded final state hash."""
        scenarios = {s.id: s for s in load_suite()}
        files = sorted((run_dir / "events").iterdir())
        assert files
        for f in files:
            report = replay(f, scenarios)
            footer = orjson.loads(f.read_bytes().splitlines()[-1])
            assert report.final_state_hash == footer["final_state_hash"]

    def test_random_agent_runs_replay(self, tmp_path: Path) -> None:
        """Event logs of seeded random agents (writes, errors and denials mixed) replay to their final hashes."""
        scenarios = load_suite()
        run_suite(scenarios, [0, 1, 2], "random", build_agent_factory("random"), tmp_path)
        by_id = {s.id: s for s in scenarios}
        applied = 0
        for f in sorted((tmp_path / "events").iterdir()):
            applied += replay(f, by_id).applied
        assert applied > 0

    def test_tampered_write_is_caught(self, run_dir: Path, tmp_path: Path) -> None:
        """Changing a recorded write's amount makes replay fail at that event."""
        f = run_dir / "events" / "split-balance-three-ways__seed-11.jsonl"
        lines = f.read_bytes().splitlines()
        out = []
        for line in lines:
            rec = orjson.loads(line)
            if rec.get("tool") == "set_schedule":
                rec["args"]["instalments"][0]["amount"] = "1.00"
            out.append(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS))
        bad = tmp_path / f.name
        bad.write_bytes(b"\n".join(out) + b"\n")
        with pytest.raises(ReplayError, match="set_schedule"):
            replay(bad, {s.id: s for s in load_suite()})

    def test_cli_replay(self, run_dir: Path) -> None:
        """`simworld replay EVENTS.jsonl` confirms the hash and exits 0."""
        f = run_dir / "events" / "split-balance-three-ways__seed-11.jsonl"
        done = subprocess.run([sys.executable, "-m", "simworld", "replay", str(f)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "confirmed" in done.stdout

    def test_cli_replay_missing_file(self, tmp_path: Path) -> None:
        """A missing event file is one clear error line and exit code 2."""
        done = subprocess.run([sys.executable, "-m", "simworld", "replay", str(tmp_path / "nope.jsonl")],
                              capture_output=True, text=True)
        assert done.returncode == 2
        assert done.stderr.strip().count("\n") == 0 and "not found" in done.stderr
