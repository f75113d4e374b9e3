"""The HTML report on a large run: its size, the time to write it, and how fast it loads and responds in Chromium.

Run: python benchmarks/bench_report.py [--episodes 10000] [--agent random] [--dir DIR] [--reuse]

Builds a real run of about N episodes (the agent over the whole suite, for as many dev
seeds as it takes; --reuse keeps a run already in DIR/run), writes ``simworld report
--html`` for it, then opens the page in headless Chromium (Debian's chromium, or
SIMWORLD_CHROMIUM=PATH, driven by Playwright) and reports, each the median of --repeat
loads: the time from navigation to the page being ready (summary, charts and the first page
of the episode table drawn), the time to filter the table to failures, to sort it by
score, and to open an episode (which decompresses its chunk of details).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from simworld._agents.kinds import build_agent_factory
from simworld._edges.report import load_run, summarize
from simworld._edges.report_html import write_html
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_suite

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def build(root: Path, episodes: int, agent: str) -> Path:
    run = root / "run"
    if run.exists():
        shutil.rmtree(run)
    suite = load_suite()
    seeds = list(range(-(-episodes // len(suite))))
    t = time.perf_counter()
    result = run_suite(suite, seeds, agent, build_agent_factory(agent), run, keep_results=False)
    print(f"ran {result.episodes} episodes ({agent}, seeds 0..{seeds[-1]}) in {time.perf_counter() - t:.1f} s")
    return run


def browser_times(html: Path, repeat: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("SIMWORLD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    samples: dict[str, list[float]] = {"load": [], "filter": [], "sort": [], "open": [], "heap_mb": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                errors: list[str] = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                t = time.perf_counter()
                page.goto(html.as_uri())
                page.wait_for_selector("body[data-ready='1']", timeout=120_000)
                samples["load"].append(time.perf_counter() - t)
                t = time.perf_counter()
                page.select_option("#f-status", "failed")
                page.wait_for_function("document.querySelectorAll('#episodes tbody tr').length > 0")
                samples["filter"].append(time.perf_counter() - t)
                t = time.perf_counter()
                page.click("#episodes th[data-key=total]")
                samples["sort"].append(time.perf_counter() - t)
                t = time.perf_counter()
                page.locator("#episodes tbody tr.ep").nth(5).click()
                page.wait_for_selector("[data-testid=transcript]", timeout=60_000)
                samples["open"].append(time.perf_counter() - t)
                heap = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0")
                samples["heap_mb"].append(heap / 1e6)
                if errors:
                    sys.exit(f"page errors: {errors}")
                page.close()
        finally:
            browser.close()
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--agent", default="random", help="random fails most episodes: the heaviest report")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "simworld-bench-report")
    ap.add_argument("--reuse", action="store_true", help="use the run already in DIR/run")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    run_dir = args.dir / "run" if args.reuse and (args.dir / "run" / "results.jsonl").is_file() else build(
        args.dir, args.episodes, args.agent)
    t = time.perf_counter()
    run = load_run(run_dir)
    categories = {s.id: s.category for s in load_suite()}
    doc = summarize(run, categories)
    html = args.dir / "report.html"
    with html.open("wb") as f:
        write_html(doc, run, categories, f)
    wrote = time.perf_counter() - t
    results = (run_dir / "results.jsonl").stat().st_size
    events = sum(p.stat().st_size for p in (run_dir / "events").iterdir())
    print(f"{len(run.lines)} episodes ({doc['overall']['failed']} failed): results.jsonl {results / 1e6:.1f} MB, "
          f"events/ {events / 1e6:.1f} MB")
    print(f"report.html {html.stat().st_size / 1e6:.2f} MB, written in {wrote:.1f} s (read + summarize + compress)")
    times = browser_times(html, args.repeat)
    print(f"chromium (median of {args.repeat}): ready {times['load'] * 1000:.0f} ms after navigation; "
          f"filter to failures {times['filter'] * 1000:.0f} ms; sort by score {times['sort'] * 1000:.0f} ms; "
          f"open an episode {times['open'] * 1000:.0f} ms; JS heap {times['heap_mb']:.0f} MB")


if __name__ == "__main__":
    main()
