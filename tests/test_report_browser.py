"""The HTML report in a real headless Chromium, driven by Playwright through the system browser's path.

Skipped, with the reason shown, where no Chromium (or no Playwright) is installed, so the
README's test command passes on a fresh machine. CI sets SIMWORLD_REQUIRE_BROWSER=1 (after
installing Debian's chromium), and then a missing browser fails the test instead.
SIMWORLD_REPORT_SCREENSHOT=PATH also copies the screenshot there (the README's is made so).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import simworld
from test_report import SAID, TALKER

#: Flags for a root, sandbox-less, offline machine: no GPU, no background traffic, no first-run UI. Playwright
#: adds --headless and a fresh, temporary --user-data-dir itself.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str | None:
    given = os.environ.get("SIMWORLD_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _need_browser() -> tuple[Any, str]:
    """Playwright's sync API and the browser's path, or a skip (a failure under SIMWORLD_REQUIRE_BROWSER=1)."""
    required = os.environ.get("SIMWORLD_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "Playwright is not installed (pip install '.[test]')"
        if required:
            pytest.fail(f"SIMWORLD_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    path = _chromium()
    if path is None:
        reason = "no Chromium found (apt-get install chromium, or set SIMWORLD_CHROMIUM=PATH)"
        if required:
            pytest.fail(f"SIMWORLD_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return sync_playwright, path


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run with failures (the random agent over a few scenarios), its reference baseline, and its HTML report."""
    root = tmp_path_factory.mktemp("browser")
    scenarios = [a for s in ("split-balance-three-ways", "waive-small-fee", "move-due-day-fifteenth",
                             "split-yen-seven-ways") for a in ("--scenario", s)]
    for name, agent in (("base", "reference"), ("run", "random")):
        done = simworld("run", *scenarios, "--seeds", "0..2", "--agent", agent, "--out", str(root / name))
        assert done.returncode in (0, 1), done.stderr
    html = root / "report.html"
    done = simworld("report", str(root / "run"), "--compare", str(root / "base"), "--html", str(html))
    assert html.is_file(), done.stderr
    return root / "run", html


class TestInChromium:
    def test_summary_filter_and_episode(self, report: tuple[Path, Path], tmp_path: Path) -> None:
        """No console error or network; summary = results.jsonl; failures filter; an episode shows calls and checks."""
        sync_playwright, chromium = _need_browser()
        run, html = report
        lines = [orjson.loads(x) for x in (run / "results.jsonl").read_bytes().splitlines()]
        failed = [x for x in lines if not x["passed"]]
        assert failed, "the fixture run must have failures"
        problems: list[str] = []
        requests: list[str] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1360, "height": 860})
                page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}")
                        if m.type in ("error", "warning") else None)
                page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
                page.on("request", lambda r: requests.append(r.url))
                page.goto(html.as_uri())
                page.wait_for_selector("body[data-ready='1']", timeout=15_000)

                text = page.inner_text
                assert text("[data-testid=episodes]") == str(len(lines))
                assert text("[data-testid=passed]") == str(len(lines) - len(failed))
                assert text("[data-testid=failed]") == str(len(failed))
                mean = sum(float(x["total"]) for x in lines) / len(lines)
                assert text("[data-testid=mean-total]") == f"{mean:.3f}"
                assert "regression" in text("[data-testid=compare-summary]")

                page.select_option("#f-status", "failed")
                assert text("[data-testid=match-count]").startswith(f"{len(failed)} of {len(lines)}")
                results = page.locator("#episodes tbody tr td:nth-child(5)").all_inner_texts()
                assert results and set(results) <= {"FAIL", "ERROR"}

                page.locator("#episodes tbody tr.ep").first.click()
                page.wait_for_selector("[data-testid=transcript]", timeout=15_000)
                first = failed[0]
                title = text("[data-testid=episode-title]")
                assert title.startswith(f"{first['scenario']} seed {first['seed']}")
                calls = page.locator("[data-testid=transcript] [data-testid=call]").count()
                assert calls == first["counters"]["tool_calls"]
                checks = page.locator("[data-testid=checks] tbody tr").count()
                assert checks == len(first["checks"])
                assert page.is_visible("[data-testid=transcript]") and page.is_visible("[data-testid=checks]")
                failing = [c["name"] for c in first["checks"] if not c["passed"]]
                assert failing[0] in text("[data-testid=checks]")

                shot = tmp_path / "report.png"
                page.screenshot(path=str(shot))
                assert shot.stat().st_size > 10_000
                copy_to = os.environ.get("SIMWORLD_REPORT_SCREENSHOT")
                if copy_to:
                    shutil.copyfile(shot, copy_to)
            finally:
                browser.close()
        assert not problems, problems
        assert all(url.startswith(("file:", "data:")) for url in requests), requests


@pytest.fixture(scope="module")
def talk_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of an agent that writes to the customer (markup included), compared with a copy of its run
    whose lines carry no contract."""
    root = tmp_path_factory.mktemp("talk")
    (root / "talker.py").write_text(TALKER)
    done = simworld("run", "--scenario", "waive-small-fee", "--seeds", "0", "--agent", "python:talker:Talker",
                    "--out", str(root / "run"), cwd=root)
    assert done.returncode == 1, done.stderr
    shutil.copytree(root / "run", root / "old")
    lines = [orjson.loads(x) for x in (root / "run" / "results.jsonl").read_bytes().splitlines()]
    (root / "old" / "results.jsonl").write_bytes(b"".join(
        orjson.dumps({k: v for k, v in x.items() if k != "contract"}) + b"\n" for x in lines))
    html = root / "report.html"
    done = simworld("report", str(root / "run"), "--compare", str(root / "old"), "--html", str(html))
    assert html.is_file(), done.stderr
    return html


class TestTranscriptInChromium:
    def test_what_the_agent_said_is_shown_as_text(self, talk_report: Path) -> None:
        """The transcript shows the agent's texts in order as text (markup never runs), the failed check beside its
        text, and the page notes the change of contract."""
        sync_playwright, chromium = _need_browser()
        problems: list[str] = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
                page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
                page.goto(talk_report.as_uri())
                page.wait_for_selector("body[data-ready='1']", timeout=15_000)
                assert "none (written before" in page.inner_text("[data-testid=contract-note]")
                page.locator("#episodes tbody tr.ep").first.click()
                page.wait_for_selector("[data-testid=transcript]", timeout=15_000)
                box = page.locator("[data-testid=transcript]")
                assert box.locator("[data-testid=say]").all_inner_texts() == list(SAID)
                assert box.locator("[data-testid=call]").all_inner_texts() == ["find_customer", "find_customer"]
                assert box.locator("script, img").count() == 0
                kinds = box.locator(".turn").evaluate_all("els => els.map(e => e.className)")
                assert [k.split()[1] for k in kinds] == ["user", "say", "read", "say", "read", "say", "end"], kinds
                figure_turn = box.locator(".turn").nth(3)
                assert "comms:figures" in figure_turn.inner_text() and SAID[1] in figure_turn.inner_text()
                assert "comms:figures" not in box.locator(".turn").nth(5).inner_text()
                assert "agent_stopped" in page.inner_text("[data-testid=end]")
            finally:
                browser.close()
        assert not problems, problems
