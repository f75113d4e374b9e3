"""Episodes per second for the reference agent over the bundled suite, and reset cost against world size.

Run: python benchmarks/bench_episodes.py [--seeds N]

Prints, measured in one process, for the small snapshot and the generated large one (2.2 MB):
- graded episodes/s: what `simworld run` does per episode (play the agent, replay every solution
  to get the valid end states, grade);
- bare episodes/s: reset + the agent's calls + seal, no grading;
and then
- reset time on the small snapshot and on the same world grown ~100x in memory, and their ratio
  (a reset that copied or re-parsed the world would grow with it; this one should not).
"""

from __future__ import annotations

import argparse
import statistics
import time

import attrs

from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.play import play
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_suite
from simworld._world.snapshot import Snapshot
from simworld._world.state import Base


def grown(snapshot: Snapshot, factor: int) -> Snapshot:
    """The snapshot with every table copied ``factor`` times under new ids and foreign keys."""
    tables = {}
    for table, records in snapshot.base.tables.items():
        out = dict(records)
        for k in range(1, factor):
            for rid, rec in records.items():
                new_id = f"{rid}~{k}"
                keys = {f: f"{getattr(rec, f)}~{k}" for f in ("customer_id", "policy_id", "plan_id")
                        if hasattr(rec, f) and getattr(rec, f)}
                out[new_id] = attrs.evolve(rec, id=new_id, **keys)
        tables[table] = out
    return attrs.evolve(snapshot, base=Base.build(tables))


def time_resets(scenarios, n: int) -> list[float]:
    """Median reset time of each scenario, sampled in turn so machine noise hits both alike."""
    samples: list[list[float]] = [[] for _ in scenarios]
    for seed in range(n):
        for i, scenario in enumerate(scenarios):
            env = Environment(scenario, seed)
            t = time.perf_counter()
            env.reset()
            samples[i].append(time.perf_counter() - t)
    return [statistics.median(s) for s in samples]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=30)
    args = ap.parse_args()
    factory = build_agent_factory("reference")
    seeds = list(range(args.seeds))
    figures = {}
    for world in ("small", "large"):
        scenarios = load_suite(None, None, world)
        n = len(scenarios) * len(seeds)
        run_suite(scenarios, seeds[:2], "reference", factory, None)  # warm caches
        t = time.perf_counter()
        result = run_suite(scenarios, seeds, "reference", factory, None)
        graded = n / (time.perf_counter() - t)
        assert all(r["passed"] for r in result.results), "the reference agent must pass every episode"
        t = time.perf_counter()
        for sc in scenarios:
            for seed in seeds:
                play(Environment(sc, seed, agent_name="reference"), factory)
        bare = n / (time.perf_counter() - t)
        records = sum(len(r) for r in scenarios[0].snapshot.base.tables.values())
        figures[world] = (graded, bare, records, n)
    scenarios = load_suite()

    sc = scenarios[0]
    big = attrs.evolve(sc, snapshot=grown(sc.snapshot, 100))
    records = sum(len(r) for r in sc.snapshot.base.tables.values())
    big_records = sum(len(r) for r in big.snapshot.base.tables.values())
    small_reset, big_reset = time_resets([sc, big], 300)

    print(f"scenarios={len(scenarios)} seeds={len(seeds)} episodes per world={figures['small'][3]}")
    print("world   records  graded eps/s  bare eps/s   (graded = run + solution replays + grading)")
    for world, (graded, bare, recs, _n) in figures.items():
        print(f"{world:<7} {recs:>7}  {graded:>12.1f}  {bare:>10.1f}")
    print(f"reset median, {records} records:    {small_reset * 1e6:8.1f} us")
    print(f"reset median, {big_records} records: {big_reset * 1e6:8.1f} us")
    print(f"reset ratio large/small: {big_reset / small_reset:.2f} (world is {big_records / records:.0f}x larger)")


if __name__ == "__main__":
    main()
