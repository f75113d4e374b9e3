"""`simworld report`: text, JSON and HTML summaries of a run, and the comparison of two runs."""

from __future__ import annotations

import base64
import gzip
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import simworld

from simworld._edges.report import compare_runs, load_run, summarize
from simworld._episode.contract import system_text
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


#: A python agent that writes to the customer: beside a call, beside a second call (a figure it made up, which the
#: communications grader fails), and alone at the end (a plain last word: no outcome).
TALKER = """
class Talker:
    SAYS = [
        {"say": "Let me look you up. <script>alert(1)</script>", "tool": "find_customer", "args": {"query": "Nobody"}},
        {"say": "Your fee of 987.65 has been waived.", "tool": "find_customer", "args": {"query": "Somebody"}},
        {"say": "Goodbye <img src=x onerror=alert(2)>", "stop": True},
    ]

    def __init__(self):
        self.step = 0

    def act(self, observation):
        self.step += 1
        return self.SAYS[self.step - 1]
"""
SAID = ("Let me look you up. <script>alert(1)</script>", "Your fee of 987.65 has been waived.",
        "Goodbye <img src=x onerror=alert(2)>")


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the talking agent over waive-small-fee seed 0."""
    root = tmp_path_factory.mktemp("talk")
    (root / "talker.py").write_text(TALKER)
    done = simworld("run", "--scenario", "waive-small-fee", "--seeds", "0", "--agent", "python:talker:Talker",
                    "--out", str(root / "run"), cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr
    return root / "run"


def _page_details(page: str) -> list[dict[str, Any]]:
    """Every episode's details embedded in an HTML report (its gzip-compressed, base64-encoded chunks)."""
    out = []
    for packed in re.findall(r'<script type="text/plain" id="chunk-\d+">([^<]*)</script>', page):
        systems, *details = map(orjson.loads, gzip.decompress(base64.b64decode(packed)).splitlines())
        for d in details:
            d["transcript"]["system"] = systems[d["transcript"]["system"]]
        out += details
    return out


class TestTranscript:
    def test_text_shows_what_the_agent_said_in_order(self, talk: Path) -> None:
        """--episode prints the transcript: request, each text and call in order, the failed check under its text."""
        done = simworld("report", str(talk), "--episode", "waive-small-fee:0")
        assert done.returncode == 0, done.stderr
        text = done.stdout.split("transcript of waive-small-fee seed 0")[1]
        order = ["system (", "user:", SAID[0], 'call find_customer {"query":"Nobody"}', "-> ok", SAID[1],
                 "FAILED comms:figures: say (seq 1)", 'call find_customer {"query":"Somebody"}', SAID[2],
                 "end: outcome None, stop reason agent_stopped"]
        at = [text.find(x) for x in order]
        assert -1 not in at and at == sorted(at), list(zip(order, at, strict=True))
        assert "You work at an insurer's billing desk" in text and "The desk's policy follows" not in text

    def test_json_turns_carry_their_failed_checks(self, talk: Path) -> None:
        """--json holds the transcript: say and call turns in order; comms:figures on the made-up figure's text only."""
        doc = orjson.loads(simworld("report", str(talk), "--json", "--episode", "waive-small-fee:0").stdout)
        (t,) = doc["episodes"]
        assert [(x["kind"], x["seq"]) for x in t["turns"]] == [("say", 0), ("read", 0), ("say", 1), ("read", 1),
                                                                 ("say", 2)]
        assert [x["args"]["text"] for x in t["turns"] if x["kind"] == "say"] == list(SAID)
        failed = [[c["name"] for c in x["failed"]] for x in t["turns"]]
        assert "comms:figures" in failed[2] and not failed[0] and not failed[4], failed
        assert "comms:figures" not in [c["name"] for c in t["end"]["failed"]]
        assert "outcome_allowed" in [c["name"] for c in t["end"]["failed"]]
        header = orjson.loads((talk / "events" / "waive-small-fee__seed-0.jsonl").read_bytes().splitlines()[0])
        assert t["contract"] == "simworld.chat/1" and t["system"] == system_text(header["policy"])

    def test_unknown_episode_is_refused(self, talk: Path) -> None:
        """--episode naming no episode of the run is one line and exit 2."""
        for spec in ("waive-small-fee:7", "waive-small-fee"):
            done = simworld("report", str(talk), "--episode", spec)
            assert done.returncode == 2 and "--episode" in done.stderr and done.stderr.count("\n") == 1, done.stderr

    def test_html_holds_the_transcript_escaped(self, talk: Path, tmp_path: Path) -> None:
        """The page embeds the transcript (texts in order, failed check beside its text); no agent markup is raw."""
        out = tmp_path / "out.html"
        done = simworld("report", str(talk), "--html", str(out))
        assert done.returncode == 0, done.stderr
        page = out.read_text()
        assert "<script>alert" not in page and "<img src=x" not in page
        (details,) = _page_details(page)
        turns = details["transcript"]["turns"]
        assert [x["args"]["text"] for x in turns if x["kind"] == "say"] == list(SAID)
        assert [c["name"] for c in turns[2]["failed"]] == ["comms:figures", "comms:claims"]
        assert details["transcript"]["request"].startswith("Hello")
        assert details["transcript"]["system"].startswith("You work at an insurer's billing desk")


class TestCompareContract:
    def test_a_change_of_contract_is_said(self, talk: Path, tmp_path: Path) -> None:
        """Comparing with a run whose lines carry no (or another) contract says so in text, JSON and the page."""
        for name, contract in (("none", None), ("other", "simworld.chat/0")):
            old = tmp_path / name
            shutil.copytree(talk, old)
            lines = [{k: v for k, v in x.items() if k != "contract"} for x in _lines(talk)]
            if contract:
                lines = [{**x, "contract": contract} for x in lines]
            (old / "results.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
            done = simworld("report", str(talk), "--compare", str(old), "--html", str(tmp_path / f"{name}.html"))
            assert done.returncode == 0, done.stderr
            note = [x for x in done.stdout.splitlines() if x.startswith("note: the conversation's rules differ")]
            assert len(note) == 1 and "this run simworld.chat/1" in note[0], done.stdout
            assert ("none (written before" if contract is None else contract) in note[0]
            cmp = orjson.loads(simworld("report", str(talk), "--compare", str(old), "--json").stdout)["compare"]
            assert cmp["different_contracts"] == note[0].split("(", 1)[1].split("): ")[0]
            assert cmp["different_contracts"] in (tmp_path / f"{name}.html").read_text()

    def test_same_contract_says_nothing(self, talk: Path) -> None:
        """Two runs under one contract: no note, different_contracts null."""
        done = simworld("report", str(talk), "--compare", str(talk), "--json")
        assert orjson.loads(done.stdout)["compare"]["different_contracts"] is None
        assert "rules differ" not in simworld("report", str(talk), "--compare", str(talk)).stdout
