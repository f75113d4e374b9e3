"""Packaging: a non-editable install, run from another directory, finds the bundled suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


class TestWheel:
    def test_non_editable_install_runs_bundled_suite(self, tmp_path: Path) -> None:
        """`pip install --target` of the project, used from elsewhere, lists and runs the bundled scenarios."""
        target = tmp_path / "site"
        build = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                                str(target), str(ROOT)], capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        bundled = target / "simworld" / "_bundled"
        assert (bundled / "scenarios" / "split-balance-three-ways" / "task.json").exists()
        assert (bundled / "snapshots" / "small.json").exists()
        assert (target / "graders" / "outcome.py").exists()

        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        env = {**os.environ, "PYTHONPATH": str(target)}
        probe = subprocess.run([sys.executable, "-c", "import simworld, graders; print(simworld.__file__)"],
                               capture_output=True, text=True, cwd=elsewhere, env=env)
        assert probe.stdout.strip().startswith(str(target)), probe.stdout + probe.stderr
        listed = subprocess.run([sys.executable, "-m", "simworld", "list"], capture_output=True, text=True,
                                cwd=elsewhere, env=env)
        assert listed.returncode == 0, listed.stderr
        expected = sorted(p.name for p in (ROOT / "scenarios").iterdir() if (p / "task.json").exists())
        assert [line.split()[0] for line in listed.stdout.splitlines()] == expected
        ran = subprocess.run([sys.executable, "-m", "simworld", "run", "--seed", "3", "--out", "o"],
                             capture_output=True, text=True, cwd=elsewhere, env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        results = [orjson.loads(x) for x in (elsewhere / "o" / "results.jsonl").read_bytes().splitlines()]
        assert len(results) == len(expected) and all(r["passed"] for r in results)
