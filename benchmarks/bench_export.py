"""Export throughput and memory on a run of 100,000 episodes.

Run: python benchmarks/bench_export.py [--episodes 100000] [--workers N] [--dir DIR]
(default: every core, and a folder in the temp directory)

Builds a run directory of N episodes by running the reference agent over the suite once
per scenario at one seed, then replicating those event logs under N distinct dev seeds
(the files are rewritten with their own seed, so every line is a real, distinct episode
file). Then exports it in each format, on one process and on --workers processes, and
prints episodes per second and the peak memory traced while exporting a run of N/10 and
of N episodes on one process (constant memory means the two peaks are about equal).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

import orjson

from simworld._agents.kinds import build_agent_factory
from simworld._edges.export import FORMATS, export_run
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_suite
from simworld._world.state import canonical_bytes


def build(root: Path, n: int) -> None:
    if root.exists():
        shutil.rmtree(root)
    seed_run = root / "seed-run"
    suite = load_suite()
    result = run_suite(suite, [1], "reference", build_agent_factory("reference"), seed_run)
    templates = []
    for r in result.results:
        lines = (seed_run / "events" / f"{r['scenario']}__seed-1.jsonl").read_bytes().splitlines()
        header = orjson.loads(lines[0])
        templates.append((r, header, b"\n".join(lines[1:]) + b"\n"))
    events = root / "run" / "events"
    events.mkdir(parents=True)
    with (root / "run" / "results.jsonl").open("wb") as out:
        for i in range(n):
            r, header, body = templates[i % len(templates)]
            seed = 10 + i
            out.write(canonical_bytes({**r, "seed": seed}) + b"\n")
            (events / f"{r['scenario']}__seed-{seed}.jsonl").write_bytes(
                canonical_bytes({**header, "seed": seed}) + b"\n" + body)


class _Null:
    def write(self, data: bytes) -> int:
        return len(data)


def measure(run: Path, fmt: str) -> tuple[int, float, int]:
    tracemalloc.start()
    t = time.perf_counter()
    report = export_run(run, fmt, _Null())  # type: ignore[arg-type]
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return report.written, seconds, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "simworld-bench-export")
    args = ap.parse_args()
    t = time.perf_counter()
    build(args.dir, args.episodes)
    print(f"built a run of {args.episodes} episodes in {time.perf_counter() - t:.1f} s")
    run = args.dir / "run"
    for workers in sorted({1, args.workers}):
        for fmt in FORMATS:
            t = time.perf_counter()
            with (args.dir / f"out.{fmt}.jsonl").open("wb") as f:
                report = export_run(run, fmt, f, workers=workers)
            seconds = time.perf_counter() - t
            size = (args.dir / f"out.{fmt}.jsonl").stat().st_size
            print(f"{fmt:<7} workers={workers} {report.written} episodes in {seconds:6.1f} s: "
                  f"{report.written / seconds:8.0f} episodes/s, {size / 1e6:7.1f} MB")
    for fmt in FORMATS:  # the disk's own ceiling: the same bytes written again, with no export work at all
        done = args.dir / f"out.{fmt}.jsonl"
        t = time.perf_counter()
        with done.open("rb") as src, (args.dir / "copy.jsonl").open("wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
        seconds = time.perf_counter() - t
        (args.dir / "copy.jsonl").unlink()
        print(f"{fmt:<7} output written again as bytes: {done.stat().st_size / seconds / 1e6:,.0f} MB/s, a ceiling of "
              f"{args.episodes / seconds:,.0f} episodes/s for this format on this disk")
    n_all, _, peak_all = measure(run, "openai")
    tenth = args.dir / "tenth"
    build(tenth, args.episodes // 10)
    n_small, _, peak_small = measure(tenth / "run", "openai")
    print(f"peak traced memory: {peak_small / 1e6:.2f} MB exporting {n_small} episodes, "
          f"{peak_all / 1e6:.2f} MB exporting {n_all} (ratio {peak_all / peak_small:.2f})")
    shutil.rmtree(args.dir)


if __name__ == "__main__":
    main()
