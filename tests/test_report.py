"""`simworld report`: text, JSON and HTML summaries of a run, and the comparison of two runs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import orjson
import pytest
from helpers import simworld

from simworld._edges.report import compare_runs, load_run, summarize
from simworld._running.rundir import pass_hat_k

SCENARIOS = ("split-balance-three-ways", "waive-small-fee", "split-yen-seven-ways")


def _run(out: Path, *args: str) -> Path:
    scenario_args = [a for s in SCENARIOS for a in ("--scenario", s)]
    done = simworld("run", *scenario_args, "--out", str(out), *args)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three runs over one grid: the reference agent, a drifting one (fails the yen split), and two trials of it."""
    root = tmp_path_factory.mktemp("runs")
    return {
        "ref": _run(root / "ref", "--seeds", "0..1"),
        "drift": _run(root / "drift", "--seeds", "0..1", "--agent", "drift:round-each"),
        "trials": _run(root / "trials", "--seeds", "0..1", "--agent", "drift:round-each", "--trials", "2"),
        "other": _run(root / "other", "--seeds", "1..2", "--agent", "drift:round-each"),
    }


def _lines(run: Path) -> list[dict[str, object]]:
    return [orjson.loads(x) for x in (run / "results.jsonl").read_bytes().splitlines()]


class TestSummary:
    def test_text_counts_match_results(self, runs: dict[str, Path]) -> None:
        """The text report's overall line and per-scenario rows are the counts of results.jsonl."""
        done = simworld("report", str(runs["drift"]))
        assert done.returncode == 0, done.stderr
        lines = _lines(runs["drift"])
        passed = sum(bool(x["passed"]) for x in lines)
        assert f"overall: {passed}/{len(lines)} passed" in done.stdout
        assert re.search(r"split-yen-seven-ways\s+2\s+0\s+0\.0%", done.stdout), done.stdout
        assert "by category" in done.stdout and "split" in done.stdout

    def test_failure_modes_ranked_with_an_example(self, runs: dict[str, Path]) -> None:
        """Failure modes list each failing check with its count and an example episode, most frequent first."""
        doc = orjson.loads(simworld("report", str(runs["drift"]), "--json").stdout)
        modes = doc["failure_modes"]
        assert modes and [m["failed"] for m in modes] == sorted((m["failed"] for m in modes), reverse=True)
        by_name = {m["check"]: m for m in modes}
        lines = _lines(runs["drift"])
        for name, mode in by_name.items():
            failing = [x for x in lines if any(c["name"] == name and not c["passed"] for c in x["checks"])]
            assert mode["failed"] == len(failing)
            assert mode["example"] == {"scenario": failing[0]["scenario"], "seed": failing[0]["seed"], "trial": 0}

    def test_json_is_the_same_report(self, runs: dict[str, Path]) -> None:
        """--json prints one document with the overall, category, scenario and check breakdowns."""
        done = simworld("report", str(runs["ref"]), "--json")
        doc = orjson.loads(done.stdout)
        assert doc["format"] == "simworld.report/1"
        assert doc["overall"] == {"episodes": 6, "passed": 6, "failed": 0, "harness_errors": 0, "pass_rate": 1.0,
                                  "mean_total": 1.0}
        assert {c["name"] for c in doc["by_category"]} == {"split", "fees"}
        assert [s["name"] for s in doc["by_scenario"]] == list(SCENARIOS)
        assert doc["failure_modes"] == [] and doc["run"]["complete"] is True

    def test_pass_hat_k_with_trials(self, runs: dict[str, Path]) -> None:
        """With trials, the report gives pass^k over the tasks, as the run computed it."""
        doc = orjson.loads(simworld("report", str(runs["trials"]), "--json").stdout)
        meta = orjson.loads((runs["trials"] / "run.json").read_bytes())
        assert doc["pass_hat_k"] == meta["pass_hat_k"] == pass_hat_k(
            [t["successes"] for t in meta["tasks"]], 2)

    def test_by_check(self, runs: dict[str, Path]) -> None:
        """--by check lists every check with its runs and failures."""
        done = simworld("report", str(runs["drift"]), "--by", "check")
        assert done.returncode == 0 and "by check" in done.stdout and "by scenario" not in done.stdout
        assert "conservation" in done.stdout

    def test_bad_by_is_refused(self, runs: dict[str, Path]) -> None:
        """--by takes category, scenario or check; anything else is a usage error (exit 2) that lists them."""
        done = simworld("report", str(runs["ref"]), "--by", "agent")
        assert done.returncode == 2 and "category" in done.stderr and "Traceback" not in done.stderr

    def test_not_a_run(self, tmp_path: Path) -> None:
        """A directory without results.jsonl is one line and exit 2."""
        done = simworld("report", str(tmp_path))
        assert done.returncode == 2 and "has no results.jsonl" in done.stderr and done.stderr.count("\n") == 1


class TestIncomplete:
    def test_killed_run_is_reported_and_said_so(self, runs: dict[str, Path], tmp_path: Path) -> None:
        """A run killed mid-line reports its whole lines, and says it is incomplete (text, JSON and stderr)."""
        run = tmp_path / "killed"
        shutil.copytree(runs["drift"], run)
        meta = orjson.loads((run / "run.json").read_bytes())
        (run / "run.json").write_bytes(orjson.dumps({**meta, "status": "running"}))
        data = (run / "results.jsonl").read_bytes()
        kept = data.splitlines(keepends=True)[:3]
        (run / "results.jsonl").write_bytes(b"".join(kept) + b'{"scenario": "split-')
        done = simworld("report", str(run))
        assert done.returncode == 0, done.stderr
        assert "INCOMPLETE" in done.stdout and "3 of 6 episode(s)" in done.stdout
        assert "incomplete run" in done.stderr
        doc = orjson.loads(simworld("report", str(run), "--json").stdout)
        assert doc["run"]["complete"] is False and doc["overall"]["episodes"] == 3


class TestCompare:
    def test_flips_regressions_first(self, runs: dict[str, Path]) -> None:
        """Comparing the drifting run with the reference baseline lists its regressions with the changed checks."""
        doc = summarize(load_run(runs["drift"]), {})
        cmp = compare_runs(load_run(runs["drift"]), load_run(runs["ref"]))
        doc_lines = _lines(runs["drift"])
        failing = {(x["scenario"], x["seed"]) for x in doc_lines if not x["passed"]}
        assert cmp["regressions"] == len(failing) == doc["overall"]["failed"] and cmp["fixes"] == 0
        regressions = [c for c in cmp["changes"] if c["change"] == "regression"]
        assert {(c["scenario"], c["seed"]) for c in regressions} == failing
        assert cmp["changes"][:len(regressions)] == regressions
        assert all(any(x["before"] == "pass" and x["after"] == "fail" for x in c["checks"]) for c in regressions)

    def test_cli_exit_1_on_regressions_and_0_on_fixes(self, runs: dict[str, Path]) -> None:
        """report --compare exits 1 when some episode regressed and 0 when the change is only fixes."""
        worse = simworld("report", str(runs["drift"]), "--compare", str(runs["ref"]))
        assert worse.returncode == 1, worse.stderr
        assert "regression(s)" in worse.stdout and "PASS -> FAIL" in worse.stdout
        better = simworld("report", str(runs["ref"]), "--compare", str(runs["drift"]))
        assert better.returncode == 0, better.stderr
        assert "fix" in better.stdout and "FAIL -> PASS" in better.stdout

    def test_different_seeds_refused_unless_allowed(self, runs: dict[str, Path]) -> None:
        """Runs over different seeds are refused in one line (exit 2); --allow-different compares the common ones."""
        done = simworld("report", str(runs["other"]), "--compare", str(runs["drift"]))
        assert done.returncode == 2 and "--allow-different" in done.stderr and done.stderr.count("\n") == 1
        assert "seeds differ" in done.stderr
        allowed = simworld("report", str(runs["other"]), "--compare", str(runs["drift"]), "--allow-different",
                           "--json")
        assert allowed.returncode == 0, allowed.stderr
        cmp = orjson.loads(allowed.stdout)["compare"]
        assert cmp["common"] == len(SCENARIOS) and cmp["only_in_run"] == cmp["only_in_baseline"] == len(SCENARIOS)


class TestHtml:
    def test_self_contained_and_deterministic(self, runs: dict[str, Path], tmp_path: Path) -> None:
        """--html writes one file with no external reference, the same bytes twice."""
        a, b = tmp_path / "a.html", tmp_path / "b.html"
        for out in (a, b):
            done = simworld("report", str(runs["drift"]), "--compare", str(runs["ref"]), "--html", str(out))
            assert done.returncode == 1 and out.is_file()
        page = a.read_text()
        assert a.read_bytes() == b.read_bytes()
        assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
        assert "default-src 'none'" in page
        assert page.count('id="chunk-') == 1

    def test_refuses_to_overwrite_the_runs_files(self, runs: dict[str, Path]) -> None:
        """--html pointing at the run's own results.jsonl is refused (exit 2) and the file is untouched."""
        before = (runs["ref"] / "results.jsonl").read_bytes()
        done = simworld("report", str(runs["ref"]), "--html", str(runs["ref"] / "results.jsonl"))
        assert done.returncode == 2 and (runs["ref"] / "results.jsonl").read_bytes() == before

    def test_script_cannot_be_closed_by_data(self, tmp_path: Path) -> None:
        """Agent text containing </script> cannot end the embedded data early."""
        from simworld._edges.report_html import _script_json

        assert "</script" not in _script_json({"x": "</script><script>alert(1)</script>"})
