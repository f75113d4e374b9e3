"""A seed sweep: graded episodes per CPU-second (small and large world), the disk cache, and --workers.

Run: python benchmarks/bench_sweep.py [--seeds 20] [--workers 2] [--baseline DIR]

Every figure is the reference agent over the whole suite, a new seed per block of
episodes (so the per-seed caches of one run hide nothing), run as ``simworld run`` in a
child process and timed by the kernel (user + system CPU of the finished child):

1. cold: the end-state disk cache empty (every solution played), small world, then large;
2. warm: the same seeds again with the cache filled by (1): what a second agent or
   prompt over the same seeds costs (ratio to cold);
3. workers: wall-clock episodes per second with ``--workers N`` against one process
   (ratio), both cold, and whether the two results.jsonl are byte-identical;
4. with ``--baseline DIR`` (a checkout of an older simworld), its cold small-world figure
   measured in the same run, and the ratio;
5. where the time goes: the same sweep in one process, a split and not a run (no run directory, so no
   event file), into the perturbed start, the agent's episode, the grading (with the solutions it plays)
   and the result line (its hashes); the CPU of a
   one-seed run (start-up and first use); and the CPU of writing one event file (an
   episode's file is created and renamed: a floor under every episode of a run).

Figures are printed; nothing is asserted (machines are shared and noisy: quote ratios).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(out: Path, seeds: str, *, cache: Path | None, extra: tuple[str, ...] = (), pythonpath: Path = ROOT,
        snapshot: str | None = None) -> tuple[int, float, float]:
    """Run ``simworld run`` in a child; return (episodes, CPU seconds of the child and its workers, wall seconds)."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "SIMWORLD_PROGRESS_EVERY": "100000"}
    if cache is None:
        env["SIMWORLD_NO_CACHE"] = "1"
    else:
        env["SIMWORLD_CACHE_DIR"] = str(cache)
    # simworld.cli: the public path, which older checkouts (--baseline) have too
    cmd = [sys.executable, "-c", "import sys; from simworld.cli import main; sys.argv[0] = 'simworld'; main()",
           "run", "--seeds", seeds, "--out", str(out), *extra]
    if snapshot:
        cmd += ["--snapshot", snapshot]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd=out.parent)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    episodes = sum(1 for _ in (out / "results.jsonl").open("rb"))
    return episodes, cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20, help="seeds per sweep (28 episodes each)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--baseline", type=Path, help="an older checkout to measure in the same run")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="simworld-bench-sweep-"))
    try:
        sweep = f"1000..{1000 + args.seeds - 1}"
        cache = work / "cache"
        n, cpu, _ = run(work / "cold-small", sweep, cache=cache)
        cold = n / cpu
        print(f"cold small: {n} episodes, {cpu:.2f} CPU-s: {cold:,.0f} graded episodes per CPU-second")
        n, cpu, _ = run(work / "warm-small", sweep, cache=cache)
        print(f"warm small: {n} episodes, {cpu:.2f} CPU-s: {n / cpu:,.0f} per CPU-second ({n / cpu / cold:.2f}x cold)")
        large = f"2000..{2000 + args.seeds - 1}"
        n, cpu, _ = run(work / "cold-large", large, cache=work / "cache-large", snapshot="large")
        print(f"cold large: {n} episodes, {cpu:.2f} CPU-s: {n / cpu:,.0f} per CPU-second ({n / cpu / cold:.2f}x small)")
        if args.baseline:
            n, cpu, _ = run(work / "base-small", sweep, cache=None, pythonpath=args.baseline)
            print(f"baseline cold small: {n} episodes, {cpu:.2f} CPU-s: {n / cpu:,.0f} per CPU-second "
                  f"(this tree: {cold / (n / cpu):.2f}x)")
        seeds3 = f"3000..{3000 + args.seeds - 1}"
        n1, _, wall1 = run(work / "w1", seeds3, cache=None)
        nk, _, wallk = run(work / "wk", seeds3, cache=None, extra=("--workers", str(args.workers)))
        same = (work / "w1" / "results.jsonl").read_bytes() == (work / "wk" / "results.jsonl").read_bytes()
        print(f"workers: 1 process {n1 / wall1:,.1f} episodes/s wall, {args.workers} workers {nk / wallk:,.1f} "
              f"({(nk / wallk) / (n1 / wall1):.2f}x); results.jsonl identical: {same}")
        where_the_time_goes(work, args.seeds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


SPLIT = """
import os, sys, time
os.environ["SIMWORLD_NO_CACHE"] = "1"
from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.judge import SolutionEndStates, grade, result_line
from simworld._episode.play import play
from simworld._scenario.scenario import load_suite
from simworld._world.clock import TimeGuard
suite, agent = load_suite(), build_agent_factory("reference")
first, count = int(sys.argv[1]), int(sys.argv[2])
parts = dict(start=0.0, agent=0.0, grading=0.0, line=0.0)
with TimeGuard() as guard:
    for s in suite:  # the first use of every scenario, grader and tool, not counted
        episode = play(Environment(s, 1, agent_name="reference", guard=guard), agent)
        grade(s, episode, SolutionEndStates(s, 1, guard, episode=episode))
    for seed in range(first, first + count):
        for s in suite:
            t0 = time.process_time(); s.instance(seed); t1 = time.process_time()
            episode = play(Environment(s, seed, agent_name="reference", guard=guard), agent); t2 = time.process_time()
            grading = grade(s, episode, SolutionEndStates(s, seed, guard, episode=episode)); t3 = time.process_time()
            result_line(episode, grading); t4 = time.process_time()  # its hashes; no event file is written
            for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                parts[k] += v
n, cpu = count * len(suite), sum(parts.values())
print(f"a split in one process (no run directory: no event file written): {n} episodes, {n / cpu:,.0f} graded "
      "episodes per CPU-second (" + ", ".join(f"{k} {v / n * 1000:.2f} ms {v / cpu:.0%}" for k, v in parts.items())
      + "; grading includes the solutions it plays)")
"""


def where_the_time_goes(work: Path, seeds: int) -> None:
    """The in-process split, the fixed cost of a run, and the cost of one event file (see the module docstring)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", SPLIT, "4000", str(seeds)], env=env, check=True)
    n, cpu, _ = run(work / "one-seed", "5000..5000", cache=None)
    print(f"a one-seed run ({n} episodes) as a process: {cpu:.2f} CPU-s (start-up and first use of everything)")
    sample = next((work / "cold-small" / "events").iterdir()).read_bytes()
    target = work / "files"
    target.mkdir()
    from simworld._world.events import write_atomic
    t = time.process_time()
    for i in range(2000):
        write_atomic(target / f"e{i}.jsonl", sample)
    per = (time.process_time() - t) / 2000
    print(f"one event file ({len(sample):,} bytes) written atomically: {per * 1e3:.3f} ms CPU of this process, "
          f"a ceiling of {1 / per:,.0f} episodes per CPU-second on a run that writes one per episode")


if __name__ == "__main__":
    main()
