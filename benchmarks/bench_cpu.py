"""CPU per graded episode, this tree against a baseline, as full runs and in one process.

Run: python benchmarks/bench_cpu.py [--baseline 73dab4e] [--seeds 60] [--rounds 3] [--agents reference,random]

``--baseline`` is a directory holding an older checkout, or a git revision of this repository (exported
to a temporary directory with ``git archive``). For each agent, in rounds that alternate the two trees
(new, old, new, old, ...), so a change in the machine's speed hits both alike:

1. **full runs**: ``simworld run --seeds S..S+N-1`` as a child process, no disk cache (every solution
   played), a fresh block of seeds each round, timed by the kernel (user + system CPU of the child), and
   the same with one seed. CPU per graded episode is (CPU of the N-seed run - CPU of the one-seed run) /
   (28 x (N - 1)): what one more episode costs a run, start-up excluded; also its user CPU alone (the system
   CPU is mostly the file system's cost of creating each episode's event file, which varies from 0.03 to
   0.8 ms a file with the machine's other I/O). The one-seed run less its episodes is the fixed cost of a run.
2. **in one process**: ``simworld.run_suite`` through the public API, writing a run directory (result
   lines, their hashes and the event files: everything a run does), timed with ``time.process_time``
   around the call after one warm-up seed. This is a split of the same work without start-up, not a
   substitute for (1).

3. with ``--cached``: the full runs of (1) again with the end-state disk cache on, as ``simworld run`` is by
   default, in a folder under ``--work`` emptied each round (fresh seeds: every (scenario, seed) is a miss and
   a file written), so a change in what the cache costs an episode shows; ``--work`` on the disk for a disk's
   cost.
4. with ``--instructions``: the instructions one more episode executes, counted by valgrind (cachegrind,
   no cache simulation) over full runs as in (1), ``--instruction-seeds`` seeds less one. The count
   is the same on every run of the same tree and seeds, whatever else the machine does, so it shows a
   change that CPU time, which varies by tens of percent between runs on a shared machine, cannot.
   Counted once per tree and agent, not per round, for full runs and for (2) in one process (``count`` seeds
   less one seed, each after its warm-up seed), and with ``--cached`` for full runs with the disk cache on.
   Needs valgrind on PATH.

The order of the two trees alternates from round to round (new first, then old first), so a drift in the
machine's speed during a round does not always favour the same tree. Prints each figure per round, the
median ratio new/old of the rounds' paired figures and the ratio of each tree's least reading (the one
least disturbed by the rest of the machine), and writes them to ``benchmarks/results/cpu.json``
(``--out`` to change). Nothing is asserted: machines are shared and noisy, so quote the ratios.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _record import commit_of, recorded_command  # benchmarks/, this script's folder
from _valgrind import VALGRIND, instruction_count

ROOT = Path(__file__).resolve().parent.parent
SUITE = 28

IN_PROCESS = """
import os, sys, tempfile, time
from pathlib import Path
os.environ["SIMWORLD_NO_CACHE"] = "1"
import simworld
agent_name, first, count, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
suite, factory = simworld.load_suite(), simworld.build_agent_factory(agent_name)
with tempfile.TemporaryDirectory(dir=work) as tmp:
    simworld.run_suite(suite, [first - 1], agent_name, factory, Path(tmp, "warm"))
    t = time.process_time()
    simworld.run_suite(suite, list(range(first, first + count)), agent_name, factory, Path(tmp, "run"))
    print(time.process_time() - t)
"""


def child_env(tree: Path, work: Path, **extra: str) -> dict[str, str]:
    """The environment a child runs ``tree`` in: its bytecode written and read (under ``work``, which mirrors each
    source's path), so an exported baseline compiles once, as an installed package would, whatever
    PYTHONDONTWRITEBYTECODE says here, and the fixed cost is a run's, not a compiler's."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(work / "pyc"), **extra)
    return env


def child_cpu(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(user, system) CPU seconds of ``cmd`` run to completion as a child (and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode not in (0, 1):  # 1: an episode failed, as the random agent's do
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def full_run(tree: Path, agent: str, first: int, count: int, work: Path,
             cache: Path | None = None) -> tuple[float, float]:
    """(user, system) CPU of ``simworld run`` over ``count`` seeds from ``first``: with no disk cache, or with the
    end-state disk cache on in ``cache`` (as a run is by default)."""
    cached = {"SIMWORLD_CACHE_DIR": str(cache)} if cache is not None else {"SIMWORLD_NO_CACHE": "1"}
    env = child_env(tree, work, SIMWORLD_PROGRESS_EVERY="1000000", **cached)
    out = work / f"run-{first}-{count}"
    cmd = [sys.executable, "-m", "simworld", "run", "--seeds", f"{first}..{first + count - 1}", "--agent", agent,
           "--out", str(out)]
    try:
        return child_cpu(cmd, env, work)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def instructions(tree: Path, agent: str, first: int, count: int, work: Path, cache: Path | None = None) -> float:
    """Instructions per graded episode of a full run (valgrind's count): the ``count``-seed run less the one-seed
    run, over the episodes between them, as (1) takes CPU time; with the disk cache on in ``cache`` (emptied
    first) when given. The kernel's work (a file's creation) is not an instruction counted here."""
    def counted(n: int) -> int:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
        cached = {"SIMWORLD_CACHE_DIR": str(cache)} if cache is not None else {"SIMWORLD_NO_CACHE": "1"}
        env = child_env(tree, work, PYTHONHASHSEED="0", SIMWORLD_PROGRESS_EVERY="1000000", **cached)
        out = work / f"counted-{first}-{n}"
        cmd = [*VALGRIND, sys.executable, "-m", "simworld", "run", "--seeds", f"{first}..{first + n - 1}",
               "--agent", agent, "--out", str(out)]
        try:
            done = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True)
        finally:
            shutil.rmtree(out, ignore_errors=True)
        found = instruction_count(done.stderr)
        if done.returncode not in (0, 1) or found is None:
            raise SystemExit(f"valgrind run of {tree} ({agent}) failed: {done.stderr[-2000:]}")
        return found

    return (counted(count) - counted(1)) / (SUITE * (count - 1))


def instructions_in_process(tree: Path, agent: str, first: int, count: int, work: Path) -> float:
    """Instructions per graded episode in one process (valgrind's count of (2)): ``count`` seeds less one seed,
    each after its warm-up seed, over the episodes between them."""
    def counted(n: int) -> int:
        env = child_env(tree, work, PYTHONHASHSEED="0")
        cmd = [*VALGRIND, sys.executable, "-c", IN_PROCESS, agent, str(first), str(n), str(work)]
        done = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True)
        found = instruction_count(done.stderr)
        if done.returncode != 0 or found is None:
            raise SystemExit(f"valgrind run of {tree} ({agent}) in one process failed: {done.stderr[-2000:]}")
        return found

    return (counted(count) - counted(1)) / (SUITE * (count - 1))


def in_process(tree: Path, agent: str, first: int, count: int, work: Path) -> float:
    env = child_env(tree, work)
    # cwd: the scratch directory, since ``python -c`` imports from the current directory before PYTHONPATH
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, agent, str(first), str(count), str(work)], env=env,
                          cwd=work, check=True,
                          capture_output=True, text=True)
    return float(done.stdout.strip().splitlines()[-1])



def compare_counts(trees: dict[str, Path], fig: dict[str, dict[str, list[float]]], summary: dict[str, float],
                   label: str, key: str, measure: Callable[[Path], float]) -> None:
    """``measure`` each tree once; keep the counts under ``key`` and their ratio new/old; print them."""
    found = {name: measure(tree) for name, tree in trees.items()}
    fig["new"][key], fig["old"][key] = [found["new"]], [found["old"]]
    summary[key] = round(found["new"] / found["old"], 3)
    print(f"{label}instructions per episode new/old {found['new'] / found['old']:.3f} "
          f"(new {found['new'] / 1e6:.2f} M, old {found['old'] / 1e6:.2f} M)", flush=True)


def baseline_tree(spec: str, work: Path) -> Path:
    """``spec`` as a directory, or a git revision of this repository exported into ``work``."""
    if Path(spec).is_dir():
        return Path(spec).resolve()
    target = work / "baseline"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", spec], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="73dab4e", help="an older checkout's directory or a git revision")
    ap.add_argument("--seeds", type=int, default=60, help="seeds of a full run (28 episodes each)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--agents", default="reference,random")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cpu.json")
    ap.add_argument("--work", type=Path, default=Path.cwd(),
                    help="where the runs write (default: the current directory, as simworld run does); the file "
                         "system's cost of creating a file is part of every episode")
    ap.add_argument("--instructions", action="store_true",
                    help="also count instructions per episode under valgrind (deterministic; needs valgrind)")
    ap.add_argument("--instruction-seeds", type=int, default=4, help="seeds of the counted run (28 episodes each)")
    ap.add_argument("--cached", action="store_true",
                    help="also time full runs with the end-state disk cache on, as a run is by default (in a folder "
                         "under --work, emptied each round: fresh seeds, so every file is a miss and a write)")
    args = ap.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind on PATH (e.g. apt-get install valgrind); leave the flag out to "
                 "measure CPU time alone")
    work = Path(tempfile.mkdtemp(prefix="simworld-bench-cpu-", dir=args.work))
    trees = {"new": ROOT, "old": baseline_tree(args.baseline, work)}
    figures: dict[str, dict[str, dict[str, list[float]]]] = {}
    try:
        seed = 100_000
        for tree in trees.values():  # compile each tree's bytecode, untimed
            full_run(tree, "noop", seed - 1, 1, work)
        keys = ["per_episode_ms", "per_episode_user_ms", "fixed_s", "in_process_ms"]  # timed each round
        keys += ["per_episode_cached_ms"] if args.cached else []
        for agent in args.agents.split(","):
            fig = figures[agent] = {k: {key: [] for key in keys} for k in trees}
            for r in range(args.rounds):
                order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
                for name, tree in order:  # the same seeds for both trees in a round
                    many_user, many_sys = full_run(tree, agent, seed, args.seeds, work)
                    one_user, one_sys = full_run(tree, agent, seed + args.seeds, 1, work)
                    per = (many_user + many_sys - one_user - one_sys) / (SUITE * (args.seeds - 1))
                    per_user = (many_user - one_user) / (SUITE * (args.seeds - 1))
                    fixed = one_user + one_sys - SUITE * per
                    split = in_process(tree, agent, seed + args.seeds + 1, args.seeds, work) / (SUITE * args.seeds)
                    fig[name]["per_episode_ms"].append(per * 1e3)
                    fig[name]["per_episode_user_ms"].append(per_user * 1e3)
                    fig[name]["fixed_s"].append(fixed)
                    fig[name]["in_process_ms"].append(split * 1e3)
                    cached = ""
                    if args.cached:
                        cache = work / f"cache-{name}"
                        shutil.rmtree(cache, ignore_errors=True)
                        c_many = sum(full_run(tree, agent, seed, args.seeds, work, cache))
                        c_one = sum(full_run(tree, agent, seed + args.seeds, 1, work, cache))
                        per_cached = (c_many - c_one) / (SUITE * (args.seeds - 1))
                        fig[name]["per_episode_cached_ms"].append(per_cached * 1e3)
                        cached = f"; with the disk cache {per_cached * 1e3:.3f} ms/episode"
                    print(f"{agent} round {r + 1} {name}: full run {per * 1e3:.3f} ms/episode "
                          f"({1 / per:,.0f} episodes per CPU-second; user {per_user * 1e3:.3f} ms), "
                          f"fixed {fixed:.2f} CPU-s; "
                          f"in one process {split * 1e3:.3f} ms/episode{cached}", flush=True)
                seed += 2 * args.seeds + 2
        summary: dict[str, dict[str, float]] = {}
        least: dict[str, dict[str, float]] = {}
        for agent, fig in figures.items():
            summary[agent], least[agent] = {}, {}
            for key in keys:
                ratios = [n / o for n, o in zip(fig["new"][key], fig["old"][key], strict=True)]
                summary[agent][key] = round(statistics.median(ratios), 3)
                least[agent][key] = round(min(fig["new"][key]) / min(fig["old"][key]), 3)
                print(f"{agent}: {key} new/old median {statistics.median(ratios):.3f} "
                      f"(new {statistics.median(fig['new'][key]):.3f}, old {statistics.median(fig['old'][key]):.3f}); "
                      f"least readings {least[agent][key]:.3f}")
            if args.instructions:
                at = {"agent": agent, "first": seed, "count": args.instruction_seeds, "work": work}
                compare_counts(trees, fig, summary[agent], f"{agent}: ", "instructions_per_episode",
                               functools.partial(instructions, **at))
                compare_counts(trees, fig, summary[agent], f"{agent}: in one process, ",
                               "instructions_per_episode_in_process", functools.partial(instructions_in_process, **at))
                if args.cached:
                    compare_counts(trees, fig, summary[agent], f"{agent}: with the disk cache, ",
                                   "instructions_per_episode_cached",
                                   functools.partial(instructions, **at, cache=work / "cache-counted"))
                seed += args.instruction_seeds + 1
        args.out.parent.mkdir(parents=True, exist_ok=True)
        baseline_name = (commit_of(Path(args.baseline)) or "a checkout") if Path(args.baseline).is_dir() \
            else args.baseline
        args.out.write_text(json.dumps({
            "command": recorded_command("benchmarks/bench_cpu.py", sys.argv[1:]),
            "baseline": baseline_name,
            "seeds": args.seeds, "rounds": args.rounds,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "when": time.strftime("%Y-%m-%d"), "ratios_new_over_old": summary,
            "ratios_of_least_readings": least, "figures": figures,
        }, indent=2) + "\n", encoding="utf-8")
        print(f"written: {args.out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
