"""Make the documentation's screenshots of the HTML report from a real run.

    python scripts/screenshot_report.py [--out docs/images]

Runs the random agent and the reference agent over four scenarios at seeds 0..2, writes
``simworld report RUN --compare BASELINE --html``, opens the page in headless Chromium with
Playwright (Debian's ``chromium``, or ``SIMWORLD_CHROMIUM=PATH``: no browser is downloaded),
filters the table to failures, opens the first failed episode, and saves:

- ``report.png``: the summary, the filtered table and the open episode (1360x860);
- ``report-episode.png``: that episode's transcript and checks.

The runs are deterministic, so the same code makes the same pictures (up to font rendering).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("split-balance-three-ways", "waive-small-fee", "move-due-day-fifteenth", "split-yen-seven-ways")
#: A root, sandbox-less, offline machine: no GPU, no background traffic, no first-run UI.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    """The browser's path, or exit naming how to get one."""
    found = os.environ.get("SIMWORLD_CHROMIUM") or next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None)
    if not found:
        sys.exit("screenshot_report: no Chromium found (apt-get install chromium, or set SIMWORLD_CHROMIUM=PATH)")
    return found


def simworld(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m simworld ARGS`` in ``work`` (so the page names the runs "run" and "baseline", no temp path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", "simworld", *args], capture_output=True, text=True, cwd=work,
                          env=env)


def make_report(work: Path) -> Path:
    """The two runs and the HTML report comparing them; exit on any unexpected status."""
    chosen = [a for s in SCENARIOS for a in ("--scenario", s)]
    for name, agent, ok in (("baseline", "reference", {0}), ("run", "random", {0, 1})):
        done = simworld(work, "run", *chosen, "--seeds", "0..2", "--agent", agent, "--out", name)
        if done.returncode not in ok:
            sys.exit(f"screenshot_report: simworld run --agent {agent} exited {done.returncode}:\n{done.stderr}")
    html = work / "report.html"
    done = simworld(work, "report", "run", "--compare", "baseline", "--html", html.name)
    if not html.is_file():
        sys.exit(f"screenshot_report: simworld report wrote no page:\n{done.stderr}")
    return html


def shoot(html: Path, out: Path) -> list[Path]:
    """Open the page, filter to failures, open the first failed episode, save the two pictures."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sys.exit("screenshot_report: Playwright is not installed (pip install '.[test]')")
    out.mkdir(parents=True, exist_ok=True)
    whole, episode = out / "report.png", out / "report-episode.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 860})
            page.goto(html.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=15_000)
            page.select_option("#f-status", "failed")
            page.locator("#episodes tbody tr.ep").first.click()
            page.wait_for_selector("[data-testid=transcript]", timeout=15_000)
            page.evaluate("window.scrollTo(0, 0)")  # the summary first; the click scrolled to the table
            page.screenshot(path=str(whole))
            box = page.locator("[data-testid=transcript]")
            box.scroll_into_view_if_needed()
            box.screenshot(path=str(episode))
        finally:
            browser.close()
    return [whole, episode]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="Directory for the pictures.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for path in shoot(make_report(Path(tmp)), args.out):
            print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
