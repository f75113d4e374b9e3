"""The fast export path: the same bytes as the Event/Trajectory path, and as one process with several workers."""

from __future__ import annotations

import io
import random
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from simworld._agents.kinds import build_agent_factory
from simworld._edges import export
from simworld._edges.export import FORMATS, export_run, line
from simworld._running.job import event_file_name
from simworld._running.rundir import read_results
from simworld._running.runner import run_suite
from simworld._scenario.scenario import load_suite
from simworld.errors import ReplayError, RunDirError


class _Unruly:
    """Invalid actions, args that are not objects, unknown tools, unsorted and non-ASCII values, then real calls."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def act(self, obs: Any) -> Any:
        tools = [t["name"] for t in obs.tools]
        if obs.step >= 6:
            summary = "done \u00e9\u4e2d\U0001f600"
            return {"tool": "finish", "args": {"summary": summary, "z": [2.5, {"b": None, "a": 1}]}}
        return self.rng.choice([
            "not an action", [1, {"b": 1, "a": 2}], {"no_tool": {"b": 1, "a": 2}},
            {"tool": self.rng.choice(tools), "args": [1, "x", {"b": 2, "a": 1}]},
            {"tool": self.rng.choice(tools), "args": "plain"},
            {"tool": "no_such_tool", "args": {"q": "\u00e9\n\t\"", "b": 1e-7, "a": -0.0}},
            {"tool": self.rng.choice(tools), "args": {"query": "cus_001", "zz": {"d": 1, "c": [True, False]}}},
        ])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Reference (with its crash records), random and unruly episodes over the whole suite, in one run directory."""
    out = tmp_path_factory.mktemp("run")
    (out / "events").mkdir()
    suite = load_suite()
    lines = []
    agents = (("reference", [2, 5], build_agent_factory("reference")), ("random", [3], build_agent_factory("random")),
              ("unruly", [4], lambda sc, seed, v: _Unruly(seed)))
    for name, seeds, factory in agents:
        part = out / name
        result = run_suite(suite, seeds, name, factory, part)
        lines += [orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in result.results]
        for f in (part / "events").iterdir():
            shutil.copy(f, out / "events" / f.name)
    (out / "results.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return out


def _by_objects(run_dir: Path, fmt: str) -> bytes:
    """The export as the Event/Trajectory path writes it (read_events, Event objects, line())."""
    return b"".join(line(export._from_file(run_dir / "events" / event_file_name(r["scenario"], r["seed"]), r), fmt)
                    for r in read_results(run_dir / "results.jsonl"))


def _export(run_dir: Path, fmt: str, **kw: Any) -> bytes:
    buf = io.BytesIO()
    export_run(run_dir, fmt, buf, **kw)
    return buf.getvalue()


def test_the_run_has_what_the_fast_path_must_handle(run_dir: Path) -> None:
    """The fixture holds crash records with a lost call, invalid calls and calls whose args are not objects."""
    text = b"".join(p.read_bytes() for p in (run_dir / "events").iterdir())
    assert b'"record":"crash"' in text and b'"lost":{' in text
    assert b'"kind":"invalid"' in text and b'"args":"plain"' in text and b'"kind":"unknown"' in text


@pytest.mark.parametrize("fmt", FORMATS)
def test_fast_path_writes_the_object_paths_bytes(run_dir: Path, fmt: str) -> None:
    """export_run (dicts straight from the event files) writes exactly what the Event/Trajectory path writes."""
    assert _export(run_dir, fmt) == _by_objects(run_dir, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_workers_write_the_same_bytes(run_dir: Path, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several worker processes write the bytes one process writes, in order, with the same counts."""
    monkeypatch.setattr(export, "_CHUNK_LINES", 5)  # many slices, several in flight at once
    one, many = io.BytesIO(), io.BytesIO()
    a = export_run(run_dir, fmt, one, min_score=0.5)
    b = export_run(run_dir, fmt, many, min_score=0.5, workers=3)
    assert one.getvalue() == many.getvalue() and a == b and a.written > 0 and a.filtered > 0


def test_slices_too_big_for_shared_memory_come_back_by_pipe(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slice larger than its shared slot still arrives whole and in order."""
    monkeypatch.setattr(export, "_SLOT_BYTES", 50_000)
    assert _export(run_dir, "openai", workers=2) == _export(run_dir, "openai")


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run_dir, out)
    return out


def test_an_odd_event_file_is_read_line_by_line(run_dir: Path, tmp_path: Path) -> None:
    """Blank lines and CRLF endings, which read_events accepts, export as the object path does."""
    run = _copy(run_dir, tmp_path)
    files = sorted((run / "events").iterdir())
    files[0].write_bytes(files[0].read_bytes().replace(b"\n", b"\n\n", 2))
    files[1].write_bytes(files[1].read_bytes().replace(b"\n", b"\r\n"))
    for fmt in FORMATS:
        assert _export(run, fmt) == _by_objects(run, fmt)


@pytest.mark.parametrize("workers", [1, 2])
def test_errors_come_after_the_lines_before_them(run_dir: Path, tmp_path: Path, workers: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken event file or result line stops the export with its message, after the lines before it."""
    monkeypatch.setattr(export, "_CHUNK_LINES", 4)
    run = _copy(run_dir, tmp_path)
    results = list(read_results(run / "results.jsonl"))
    broken = results[9]
    path = run / "events" / event_file_name(broken["scenario"], broken["seed"])
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([lines[0], orjson.dumps({"record": "event", "seq": 0})] + lines[1:]) + b"\n")
    buf = io.BytesIO()
    with pytest.raises(ReplayError, match=rf"{path.name}:2: not an event line \(KeyError"):
        export_run(run, "native", buf, workers=workers)
    assert buf.getvalue() == b"".join(_by_objects(run_dir, "native").splitlines(keepends=True)[:9])
    raw = (run / "results.jsonl").read_bytes().splitlines(keepends=True)
    (run / "results.jsonl").write_bytes(b"".join(raw[:6] + [b"{oops\n"] + raw[6:9]))
    with pytest.raises(RunDirError, match=r"results.jsonl:7: not a result line"):
        export_run(run, "trl", io.BytesIO(), workers=workers)
    report = export_run(run, "trl", io.BytesIO(), workers=workers, skip_bad_lines=True)
    assert report.bad_lines == 1 and report.written == 9


def test_workers_must_be_positive(run_dir: Path) -> None:
    """--workers 0 is refused with a message naming it."""
    with pytest.raises(export.ExportError, match="--workers 0"):
        export_run(run_dir, "native", io.BytesIO(), workers=0)


# -- results carried as their bytes: only when the event lines hash to the result line's events_hash ----------

def _results_by_file(run_dir: Path) -> list[tuple[dict[str, Any], bytes]]:
    return [(r, (run_dir / "events" / event_file_name(r["scenario"], r["seed"])).read_bytes())
            for r in read_results(run_dir / "results.jsonl")]


def test_results_are_carried_as_bytes_wherever_the_file_is_as_written(run_dir: Path) -> None:
    """Every file without a crash record is spliced, and each format's line is the one the parsed file gives."""
    spliced = 0
    for r, data in _results_by_file(run_dir):
        parts = export._spliced(data, r["events_hash"])
        if b'"record":"crash"' in data:
            assert parts is None
            continue
        assert parts is not None, r["scenario"]
        spliced += 1
        for fmt in FORMATS:
            assert export._BUILD[fmt](*parts, r) == export._BUILD[fmt](*export._parts(data), r)
    assert spliced > 50


def _file(*events: Any) -> tuple[bytes, str]:
    from simworld._world.events import Event, event_file_bytes, events_hash

    listed = [Event(i, "2026-01-01T00:00:00Z", "get_plan", args, result, "ok", 0.2, "read")
              for i, (args, result) in enumerate(events)]
    data = event_file_bytes({"scenario": "s", "seed": 1, "agent": "a", "request": "r", "policy": "p", "tools": []},
                            listed, {"outcome": None, "stop_reason": "agent_stopped", "error": None})
    return data, events_hash(listed)


def test_a_marker_inside_the_arguments_or_the_result_is_parsed_whole() -> None:
    """Text that looks like the line's own keys, inside the arguments or the result, is never split on: such a
    file is parsed whole, and its lines are those of the parsed file."""
    marker = {"a": 1, "record": "event", "result": {"seq": 9, "status": "ok"}}
    for args, result in ((marker, {"x": 1}), ({"plan_id": "p"}, marker), ({"plan_id": "p"}, [marker, marker])):
        data, digest = _file(({"plan_id": "p"}, {"ok": True}), (args, result))
        assert export._spliced(data, digest) is None
        run = export._parts(data)
        assert orjson.loads(export._BUILD["native"](*run, {}))["calls"][1]["args"] == args


def test_a_file_edited_since_the_run_is_parsed_whole() -> None:
    """A byte changed in an event line (or an events_hash that is not its own) is not spliced."""
    data, digest = _file(({"plan_id": "p"}, {"amount": "10.00"}))
    assert export._spliced(data, digest) is not None
    assert export._spliced(data.replace(b'"10.00"', b'"10.01"'), digest) is None
    assert export._spliced(data, "0" * 32) is None and export._spliced(data, None) is None
