"""Byte-identity against another checkout: results.jsonl and every event file, for several agents and seeds.

Run: python benchmarks/same_bytes.py BASELINE_DIR [--seeds 0..9] [--tree DIR]

Each agent (reference, random, noop, drift:round-each, drift:resplit) runs over the whole suite at the given
seeds, once with this tree and once with ``BASELINE_DIR`` (an older checkout), each as ``simworld run`` in a
child process with no disk cache. The two run directories are compared file by file: results.jsonl and
events/ must be byte-identical (run.json holds wall-clock figures and versions, so it is not compared). Prints
one line per agent and exits 1 when any differ, naming the first differing file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ("reference", "random", "noop", "drift:round-each", "drift:resplit")


def run(tree: Path, agent: str, seeds: str, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "SIMWORLD_NO_CACHE": "1", "SIMWORLD_PROGRESS_EVERY": "100000"}
    cmd = [sys.executable, "-c", "import sys; from simworld.cli import main; sys.argv[0] = 'simworld'; main()",
           "run", "--seeds", seeds, "--agent", agent, "--out", str(out)]
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=out.parent)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{tree}: simworld run --agent {agent} exited {done.returncode}: {done.stderr.decode()}")


def differ(a: Path, b: Path) -> str | None:
    """The first file (relative) whose bytes differ, or that only one side has; None when all agree."""
    names = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file()} |
                   {p.relative_to(b) for p in b.rglob("*") if p.is_file()})
    for name in names:
        if name.name == "run.json":
            continue
        pa, pb = a / name, b / name
        if not pa.exists() or not pb.exists() or pa.read_bytes() != pb.read_bytes():
            return str(name)
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("baseline", type=Path)
    ap.add_argument("--seeds", default="0..9")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout to test (default: this one)")
    args = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="simworld-same-bytes-") as tmp:
        work = Path(tmp)
        for agent in AGENTS:
            name = agent.replace(":", "-")
            run(args.tree, agent, args.seeds, work / f"new-{name}")
            run(args.baseline, agent, args.seeds, work / f"old-{name}")
            first = differ(work / f"new-{name}", work / f"old-{name}")
            lines = sum(1 for _ in (work / f"new-{name}" / "results.jsonl").open("rb"))
            print(f"{agent}: {lines} episodes, " + ("byte-identical" if first is None else f"DIFFERS at {first}"))
            bad += first is not None
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
