"""Determinism: the same run gives byte-identical results and event logs, in any process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(out: Path, hashseed: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    return subprocess.run([sys.executable, "-m", "simworld", "run", "--seed", "7", "--out", str(out), *extra],
                          capture_output=True, text=True, env=env, check=False)


def _files(root: Path) -> dict[str, bytes]:
    files = {"results.jsonl": (root / "results.jsonl").read_bytes()}
    files.update({f"events/{p.name}": p.read_bytes() for p in sorted((root / "events").iterdir())})
    return files


class TestRunIsReproducible:
    @pytest.mark.parametrize(("agent", "status"), [("reference", 0), ("random", 1)])
    def test_two_processes_two_hash_seeds_same_bytes(self, tmp_path: Path, agent: str, status: int) -> None:
        """`simworld run --seed 7` under PYTHONHASHSEED 0 and 12345 writes identical results and events.

        The reference agent passes every scenario (exit 0); the random agent fails some (exit 1).
        """
        a, b = tmp_path / "A", tmp_path / "B"
        ra = _run(a, "0", "--agent", agent)
        rb = _run(b, "12345", "--agent", agent)
        assert ra.returncode == status, ra.stderr
        assert rb.returncode == ra.returncode, rb.stderr
        fa, fb = _files(a), _files(b)
        assert sorted(fa) == sorted(fb)
        assert len(fa) > 2
        for name in fa:
            assert fa[name] == fb[name], f"{name} differs between the two processes"

    def test_run_json_is_the_only_place_for_wall_clock(self, tmp_path: Path) -> None:
        """results.jsonl and event logs carry no wall-clock value; run.json carries the wall time."""
        out = tmp_path / "A"
        assert _run(out, "1").returncode == 0
        import orjson

        meta = orjson.loads((out / "run.json").read_bytes())
        assert meta["wall_seconds"] > 0
        assert "started_at_epoch" in meta
        blob = (out / "results.jsonl").read_bytes() + b"".join(p.read_bytes() for p in (out / "events").iterdir())
        assert b"wall" not in blob and b"epoch" not in blob

    def test_different_seeds_give_different_worlds(self, tmp_path: Path) -> None:
        """A seed is not ignored: seeds 7 and 8 give different event logs."""
        a, b = tmp_path / "A", tmp_path / "B"
        assert _run(a, "0").returncode == 0
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run([sys.executable, "-m", "simworld", "run", "--seed", "8", "--out", str(b)], check=True,
                       capture_output=True, env=env)
        assert _files(a)["results.jsonl"] != _files(b)["results.jsonl"]


class TestInProcess:
    def test_same_episode_twice_in_one_process(self) -> None:
        """Two runs in one process give the same state and events hashes, so no state leaks between runs."""
        from simworld._agents.kinds import build_agent_factory
        from simworld._running.runner import run_suite
        from simworld._scenario.scenario import load_suite

        scenarios = load_suite()
        factory = build_agent_factory("reference")
        first = run_suite(scenarios, [3, 4], "reference", factory, None)
        second = run_suite(scenarios, [3, 4], "reference", factory, None)
        assert first.results == second.results
