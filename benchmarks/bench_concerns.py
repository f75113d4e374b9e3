"""Where an episode's CPU goes, by concern: a run's per-episode work taken apart in one process.

Run: python benchmarks/bench_concerns.py [--agents reference,random] [--seeds 30] [--rounds 3] [--work DIR]
                                         [--out benchmarks/results/concerns.json]

For each agent, in one process with no disk cache (every solution the grading reaches is played), after one
warm-up seed: the suite at ``--seeds`` fresh seeds, each episode made as ``simworld run`` makes it
(:func:`simworld._running.job.run_episode`, then its result line appended), with CPU clocks
(``time.process_time``) around each concern:

- **start**: the seed's perturbed start (:meth:`Scenario.instance`), drawn once per (scenario, seed);
- **agent's episode**: the agent loop (:func:`simworld._episode.play.play`): the agent's own choices and the
  tools it calls;
- **solutions played**: the solutions the end-state grader reaches, played from the start (none when the agent
  made solution 0's calls);
- **each grader**: its own work, the solutions it made play left out;
- **result line**: the line's fields and hashes (:func:`simworld._episode.judge.result_line`), and the glue of
  :func:`~simworld._episode.judge.graded_line` around the graders;
- **event bytes**: the post-run hooks and the event file's bytes;
- **writing**: the event file written atomically and the result line appended (to ``--work``; a RAM file system
  keeps the disk's own variance out).

Then as many fresh seeds again through ``simworld.run_suite`` (timed as one call), so the split can be checked
against the whole: its total is printed beside the run's. Each of ``--rounds`` rounds is a process of its own on
seeds of its own; each figure is the median of the rounds (this machine's speed moves by tens of percent within
seconds). A split is not a run (the clocks cost a little, and the grading is the same but taken in pieces), so
quote the shares, and the full-run benchmark (``bench_cpu.py``) for what an episode costs. Results go to ``--out``
as JSON; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _record import commit_of, recorded_command  # benchmarks/, this script's folder

ROOT = Path(__file__).resolve().parent.parent

SPLIT = r"""
import gc, json, os, sys, time
from pathlib import Path
os.environ["SIMWORLD_NO_CACHE"] = "1"
import simworld
from simworld._episode import judge
from simworld._episode.environment import Environment
from simworld._episode.play import play
from simworld._grading.contract import GraderSpec
from simworld._running import job as jobs
from simworld._running.rundir import ResultsFile
from simworld._world.clock import TimeGuard
from simworld._world.state import canonical_bytes

agent_name, first, count, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
clock = time.process_time
suite, factory = simworld.load_suite(), simworld.build_agent_factory(agent_name)
spent: dict[str, float] = {}
inside: list[str] = []  # the grader running now, if any


def add(name, seconds):
    spent[name] = spent.get(name, 0.0) + seconds


run_grader = GraderSpec.run


def timed_grader(self, episode, solutions):
    inside.append(self.path)
    t = clock()
    try:
        return run_grader(self, episode, solutions)
    finally:
        add("grader " + self.path.split(":")[-1], clock() - t)
        inside.pop()


play_solution = judge._play_solution


def timed_solution(*args):
    t = clock()
    try:
        return play_solution(*args)
    finally:
        dt = clock() - t
        add("solutions played", dt)
        if inside:  # not the grader's own work
            add("grader " + inside[-1].split(":")[-1], -dt)


def timed(name, fn):  # fn, its CPU counted under name
    def call(*args, **kwargs):
        t = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            add(name, clock() - t)
    return call


result_line, hooks = judge.result_line, jobs._hooks_and_events
timed_line, timed_hooks = timed("result line", result_line), timed("event bytes", hooks)


def episodes(seeds, out, results):
    with TimeGuard() as guard:
        for seed in seeds:
            for s in suite:
                t0 = clock()
                s.instance(seed)
                t1 = clock()
                episode = play(Environment(s, seed, agent_name=agent_name, guard=guard), factory)
                t2 = clock()
                line = judge.graded_line(s, episode, trial=0, guard=guard)
                t3 = clock()
                events = jobs._hooks_and_events(s, episode, line, out, 0)
                t4 = clock()
                jobs.store_episode(out, s.id, seed, 0, line, events)
                results.append(canonical_bytes(line) + b"\n")
                t5 = clock()
                add("start", t1 - t0)
                add("agent's episode", t2 - t1)
                add("grading (whole)", t3 - t2)
                add("writing", t5 - t4)


judge._play_solution = timed_solution
judge.result_line = timed_line
GraderSpec.run = timed_grader
jobs._hooks_and_events = timed_hooks
for name, seeds in (("warm", [first - 1]), ("split", list(range(first, first + count)))):
    out = work / name
    (out / "events").mkdir(parents=True)
    spent.clear()
    gc.freeze()  # as run_suite does: what is loaded stays out of the collector's sight while episodes are made
    with ResultsFile(out / "results.jsonl") as results:
        episodes(seeds, out, results)
    gc.unfreeze()
judge._play_solution, judge.result_line, GraderSpec.run, jobs._hooks_and_events = \
    play_solution, result_line, run_grader, hooks

# graded_line's own glue: the whole grading less what was taken apart inside it
parts = {k: v for k, v in spent.items() if k != "grading (whole)"}
inner = sum(v for k, v in parts.items() if k.startswith("grader ") or k in ("solutions played", "result line"))
parts["grading glue"] = spent["grading (whole)"] - inner
n = count * len(suite)
t = clock()
simworld.run_suite(suite, list(range(first + count, first + 2 * count)), agent_name, factory, work / "run")
whole = clock() - t
print(json.dumps({"agent": agent_name, "episodes": n, "ms_per_episode": {k: v / n * 1e3 for k, v in parts.items()},
                  "run_suite_ms_per_episode": whole / n * 1e3}))
"""


def split(agent: str, first: int, seeds: int, work: Path) -> dict[str, Any]:
    """One round: the split and the run_suite figure, in a process of its own, from seed ``first`` on."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        done = subprocess.run([sys.executable, "-c", SPLIT, agent, str(first), str(seeds), tmp], env=env, cwd=tmp,
                              check=True, capture_output=True, text=True)
    got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return got


def median_of(rounds: list[dict[str, Any]]) -> tuple[dict[str, float], float]:
    """Each concern's median over the rounds, and run_suite's."""
    names = rounds[0]["ms_per_episode"]
    per = {k: statistics.median(r["ms_per_episode"].get(k, 0.0) for r in rounds) for k in names}
    return per, statistics.median(r["run_suite_ms_per_episode"] for r in rounds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", default="reference,random")
    ap.add_argument("--seeds", type=int, default=30, help="fresh seeds (28 episodes each)")
    ap.add_argument("--rounds", type=int, default=3, help="processes, each on seeds of its own")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()),
                    help="where the runs write (a RAM file system keeps the disk's variance out)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "concerns.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    agents: dict[str, Any] = {}
    report = {"command": recorded_command("benchmarks/bench_concerns.py", sys.argv[1:]), "commit": commit_of(ROOT),
              "cpus": os.cpu_count(), "agents": agents}
    for agent in args.agents.split(","):
        rounds = [split(agent, 10_000 + 2 * args.seeds * r, args.seeds, args.work) for r in range(args.rounds)]
        per, whole = median_of(rounds)
        total = sum(per.values())
        rows = sorted(per.items(), key=lambda kv: -kv[1])
        print(f"\n{agent}: {rounds[0]['episodes']} episodes a round, {args.rounds} rounds; the split's total "
              f"{total:.3f} ms an episode, run_suite's {whole:.3f} ms (medians)")
        for name, ms in rows:
            print(f"  {name:<36} {ms:7.3f} ms  {ms / total:6.1%}")
        agents[agent] = {
            "episodes": rounds[0]["episodes"], "rounds": args.rounds, "split_total_ms": round(total, 4),
            "run_suite_ms_per_episode": round(whole, 4),
            "ms_per_episode": {k: round(v, 4) for k, v in rows},
            "share": {k: round(v / total, 4) for k, v in rows}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
