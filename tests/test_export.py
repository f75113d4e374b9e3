"""Trajectory export: each format meets its schema, loads with `datasets`, filters exactly and leaks nothing."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from jsonschema import Draft202012Validator

from simworld._agents.kinds import build_agent_factory
from simworld._edges.export import FORMATS, export_run
from simworld._running.runner import run_suite
from simworld._scenario.scenario import bundled_root, load_suite

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = {"native": "native.schema.json", "openai": "openai-finetune-chat.schema.json",
           "trl": "trl-conversational.schema.json"}
COLUMNS = {"native": {"format", "scenario", "seed", "agent", "policy", "request", "tools", "calls", "outcome",
                      "stop_reason", "error", "grade", "state_hash", "events_hash", "contract"},
           "openai": {"messages", "tools", "parallel_tool_calls"}, "trl": {"messages", "tools"}}


def _schema(fmt: str) -> Draft202012Validator:
    path = ROOT / "simworld" / "schemas" / SCHEMAS[fmt]
    return Draft202012Validator(json.loads(path.read_text()))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """One run directory mixing passing (reference) and failing (random, noop) episodes at distinct seeds."""
    out = tmp_path_factory.mktemp("run")
    (out / "events").mkdir()
    suite = load_suite()
    lines = []
    for agent, seed in (("reference", 2), ("random", 3), ("noop", 4)):
        part = out / agent
        result = run_suite(suite, [seed], agent, build_agent_factory(agent), part)
        lines += [orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in result.results]
        for f in (part / "events").iterdir():
            shutil.copy(f, out / "events" / f.name)
    (out / "results.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return out


def _export(run_dir: Path, fmt: str, **kw) -> list[dict]:
    buf = io.BytesIO()
    export_run(run_dir, fmt, buf, **kw)
    return [orjson.loads(x) for x in buf.getvalue().splitlines()]


@pytest.mark.parametrize("fmt", FORMATS)
class TestFormats:
    def test_every_line_meets_the_schema(self, run_dir: Path, fmt: str) -> None:
        """Every exported line validates against the format's JSON schema kept in the repo."""
        lines = _export(run_dir, fmt)
        assert len(lines) == 3 * len(load_suite())
        validator = _schema(fmt)
        for data in lines:
            errors = sorted(validator.iter_errors(data), key=str)
            assert not errors, errors[0].message

    def test_loads_with_datasets(self, run_dir: Path, fmt: str, tmp_path: Path) -> None:
        """The file loads with the `datasets` library into the expected rows and columns."""
        from datasets import load_dataset

        path = tmp_path / f"{fmt}.jsonl"
        with path.open("wb") as f:
            report = export_run(run_dir, fmt, f, passed_only=True)
        ds = load_dataset("json", data_files=str(path), split="train")
        assert ds.num_rows == report.written > 0
        assert set(ds.column_names) == COLUMNS[fmt]
        row = ds[0]
        if fmt == "native":
            assert row["grade"]["passed"] is True and row["calls"][0]["status"] == "ok"
        else:
            assert row["messages"][0]["role"] == "system" and row["messages"][1]["role"] == "user"
            assert row["tools"][0]["type"] == "function"

    def test_byte_identical(self, run_dir: Path, fmt: str) -> None:
        """Exporting the same run twice writes the same bytes."""
        a, b = io.BytesIO(), io.BytesIO()
        export_run(run_dir, fmt, a)
        export_run(run_dir, fmt, b)
        assert a.getvalue() == b.getvalue() and a.getvalue()


class TestShapes:
    def test_openai_arguments_are_strings_and_results_answer_calls(self, run_dir: Path) -> None:
        """OpenAI lines: arguments are JSON strings; each tool turn answers the call before it; the last is the
        terminal call."""
        for data in _export(run_dir, "openai", passed_only=True):
            msgs = data["messages"]
            for i, m in enumerate(msgs):
                if m["role"] == "assistant":
                    call = m["tool_calls"][0]
                    assert isinstance(json.loads(call["function"]["arguments"]), dict)
                    if i + 1 < len(msgs):
                        assert msgs[i + 1]["role"] == "tool" and msgs[i + 1]["tool_call_id"] == call["id"]
                        assert isinstance(msgs[i + 1]["content"], str)
            assert msgs[-1]["role"] == "assistant"
            assert msgs[-1]["tool_calls"][0]["function"]["name"] in ("finish", "escalate", "request_information",
                                                                     "decline")
            assert data["parallel_tool_calls"] is False

    def test_trl_arguments_are_objects_and_tool_turns_named(self, run_dir: Path) -> None:
        """TRL lines: arguments are objects; tool turns carry the tool's name."""
        for data in _export(run_dir, "trl", passed_only=True):
            for i, m in enumerate(data["messages"]):
                if m["role"] == "assistant":
                    fn = m["tool_calls"][0]["function"]
                    assert isinstance(fn["arguments"], dict)
                    if i + 1 < len(data["messages"]):
                        assert data["messages"][i + 1] == {**data["messages"][i + 1], "role": "tool",
                                                          "name": fn["name"]}


class TestSelection:
    def _all(self, run_dir: Path) -> list[dict]:
        return [orjson.loads(x) for x in (run_dir / "results.jsonl").read_bytes().splitlines()]

    def test_passed_only(self, run_dir: Path) -> None:
        """--passed-only exports exactly the episodes that passed."""
        got = [(x["scenario"], x["seed"]) for x in _export(run_dir, "native", passed_only=True)]
        assert got == [(r["scenario"], r["seed"]) for r in self._all(run_dir) if r["passed"]]
        assert 0 < len(got) < len(self._all(run_dir))

    @pytest.mark.parametrize("threshold", [0.0, 0.5, 0.8, 1.0])
    def test_min_score(self, run_dir: Path, threshold: float) -> None:
        """--min-score X exports exactly the episodes whose total is at least X."""
        got = [(x["scenario"], x["seed"]) for x in _export(run_dir, "native", min_score=threshold)]
        assert got == [(r["scenario"], r["seed"]) for r in self._all(run_dir) if r["total"] >= threshold]

    def test_scenario_filter(self, run_dir: Path) -> None:
        """--scenario keeps only the named scenarios."""
        got = {x["scenario"] for x in _export(run_dir, "native", scenarios=["waive-small-fee", "hardship-deferral"])}
        assert got == {"waive-small-fee", "hardship-deferral"}

    def test_bad_min_score(self, run_dir: Path) -> None:
        """A min-score outside [0, 1] is refused with a message naming it."""
        from simworld._edges.export import ExportError

        with pytest.raises(ExportError, match="--min-score"):
            export_run(run_dir, "native", io.BytesIO(), min_score=7)


class TestNoLeaks:
    def test_no_grading_side_in_training_lines(self, run_dir: Path) -> None:
        """Training lines carry no grade, no expected values, no solution and no grader."""
        for fmt in ("openai", "trl"):
            for data in _export(run_dir, fmt):
                text = json.dumps(data)
                for word in ('"passed"', '"checks"', '"expected"', "solution", "graders.", '"state_diff"'):
                    assert word not in text, (fmt, word)
        for data in _export(run_dir, "native"):
            assert all(isinstance(p, str) for p in data["grade"]["state_diff"])
            assert "solution" not in json.dumps(data["calls"])

    def test_holdout_episodes_never_exported(self, tmp_path: Path) -> None:
        """A holdout run exports nothing, and says how many it kept back."""
        run_suite(load_suite(None, ["waive-small-fee"]), [0], "reference", build_agent_factory("reference"),
                  tmp_path, split="holdout")
        buf = io.BytesIO()
        report = export_run(tmp_path, "openai", buf)
        assert report.written == 0 and report.holdout_skipped == 1 and buf.getvalue() == b""


class TestCliAndHook:
    def test_cli_matches_api_and_is_deterministic_across_processes(self, tmp_path: Path) -> None:
        """`simworld export` of two identical runs in different processes writes identical files."""
        outs = []
        for i, hashseed in enumerate(("0", "99")):
            env = {**os.environ, "PYTHONHASHSEED": hashseed}
            run = tmp_path / f"run{i}"
            subprocess.run([sys.executable, "-m", "simworld", "run", "--seed", "6", "--out", str(run)], env=env,
                           capture_output=True, check=True)
            done = subprocess.run([sys.executable, "-m", "simworld", "export", str(run), "--format", "openai",
                                   "--out", str(tmp_path / f"o{i}.jsonl")], env=env, capture_output=True, text=True)
            assert done.returncode == 0 and "exported" in done.stderr
            outs.append((tmp_path / f"o{i}.jsonl").read_bytes())
        assert outs[0] == outs[1] and outs[0].count(b"\n") == len(load_suite())

    def test_post_run_hook_writes_the_export_during_the_run(self, tmp_path: Path) -> None:
        """The post_run hook writes, as the run goes, the same lines `simworld export` writes afterwards."""
        root = bundled_root()
        for sid in ("waive-small-fee", "split-balance-three-ways"):
            shutil.copytree(root / "scenarios" / sid, tmp_path / "scenarios" / sid)
            task = tmp_path / "scenarios" / sid / "task.json"
            data = orjson.loads(task.read_bytes())
            data["hooks"] = {"post_run": ["simworld.export:openai_hook"]}
            task.write_bytes(orjson.dumps(data))
        shutil.copytree(root / "snapshots", tmp_path / "snapshots")
        run = tmp_path / "run"
        done = subprocess.run([sys.executable, "-m", "simworld", "run", "--suite", str(tmp_path / "scenarios"),
                               "--out", str(run)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        buf = io.BytesIO()
        export_run(run, "openai", buf)
        assert (run / "export.openai.jsonl").read_bytes() == buf.getvalue()

    def test_cli_errors(self, tmp_path: Path) -> None:
        """A directory that is not a run, or an unknown format, is one clear error line."""
        done = subprocess.run([sys.executable, "-m", "simworld", "export", str(tmp_path)], capture_output=True,
                              text=True)
        assert done.returncode == 2 and "results.jsonl" in done.stderr
        (tmp_path / "results.jsonl").write_text("")
        done = subprocess.run([sys.executable, "-m", "simworld", "export", str(tmp_path), "--format", "csv"],
                              capture_output=True, text=True)
        assert done.returncode == 2 and "'csv' is not one of 'native', 'openai', 'trl'" in done.stderr
