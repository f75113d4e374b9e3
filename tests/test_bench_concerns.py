"""benchmarks/bench_concerns.py takes an episode's work apart by concern: every concern is found, none is lost.

No figure is asserted (machines are shared and noisy); what is checked is that the split still reaches what it
times, since a renamed function it wraps would otherwise drop a concern from the table without a word.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from simworld._scenario.scenario import load_suite

ROOT = Path(__file__).resolve().parent.parent


def test_the_split_finds_every_concern_and_every_grader(tmp_path: Path) -> None:
    out = tmp_path / "concerns.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_concerns.py"), "--agents", "random",
                    "--seeds", "1", "--rounds", "1", "--work", str(tmp_path), "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=600)
    report = json.loads(out.read_text())
    got = report["agents"]["random"]
    per = got["ms_per_episode"]
    graders = {spec.path.split(":")[-1] for s in load_suite() for spec in s.expectations.graders}
    expected = {"start", "agent's episode", "solutions played", "result line", "event bytes", "writing",
                "grading glue"} | {f"grader {g}" for g in graders}
    assert set(per) == expected
    # The random agent matches no solution: the grading played solutions, and its own parts are counted apart.
    assert per["solutions played"] > 0 and all(v >= 0 for v in per.values()), per
    assert got["episodes"] == len(load_suite()) and got["run_suite_ms_per_episode"] > 0
    assert report["command"].startswith("python benchmarks/bench_concerns.py --agents random --seeds 1 --rounds 1")
    assert "WORK_DIR" in report["command"] and str(tmp_path) not in report["command"]
