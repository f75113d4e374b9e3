"""Hostile run directories: exports, grades and replays never overwrite their input, never half-write, never crash."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from helpers import simworld

SID = "waive-small-fee"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "o"
    done = simworld("run", "--scenario", SID, "--scenario", "split-balance-three-ways", "--seeds", "0..1",
                    "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "run"
    shutil.copytree(run_dir, target)
    return target


class TestOwnInput:
    @pytest.mark.parametrize("name", ["results.jsonl", "run.json", f"events/{SID}__seed-0.jsonl"])
    def test_export_never_writes_over_its_input(self, run_dir: Path, tmp_path: Path, name: str) -> None:
        """export --out naming one of the run's own files is refused (exit 2) and the file is unchanged."""
        run = _copy(run_dir, tmp_path)
        before = (run / name).read_bytes()
        done = simworld("export", str(run), "--out", str(run / name))
        assert done.returncode == 2 and "own files" in done.stderr
        assert (run / name).read_bytes() == before

    def test_grade_never_writes_over_its_input(self, run_dir: Path, tmp_path: Path) -> None:
        """grade --out RUN/results.jsonl is refused and results.jsonl is unchanged."""
        run = _copy(run_dir, tmp_path)
        before = (run / "results.jsonl").read_bytes()
        done = simworld("grade", str(run), "--out", str(run / "results.jsonl"))
        assert done.returncode == 2 and "own files" in done.stderr
        assert (run / "results.jsonl").read_bytes() == before

    def test_grade_to_an_unwritable_path(self, run_dir: Path, tmp_path: Path) -> None:
        """grade --out into a path that cannot be written is one clear line, exit 2, no traceback."""
        blocker = tmp_path / "file"
        blocker.write_text("x")
        done = simworld("grade", str(run_dir), "--out", str(blocker / "sub" / "regraded.jsonl"))
        assert done.returncode == 2 and "cannot write" in done.stderr and "Traceback" not in done.stderr


class TestOutputPaths:
    @pytest.mark.parametrize("args", [
        ("export", "{run}", "--out", "{run}"), ("export", "{run}", "--out", "{run}/events"),
        ("export", "{run}", "--out", "{tmp}"), ("export", "{run}", "--out", "{run}/run.json/x.jsonl"),
        ("grade", "{run}", "--out", "{run}"), ("grade", "{run}", "--out", "{run}/events"),
        ("report", "{run}", "--html", "{run}"), ("report", "{run}", "--html", "{run}/run.json/r.html"),
        ("generate", "--out", "{run}"), ("run", "--scenario", SID, "--out", "{run}/run.json/o"),
    ], ids=["export-run", "export-events", "export-tmp", "export-under-file", "grade-run", "grade-events",
            "report-run", "report-under-file", "generate-dir", "run-under-file"])
    def test_directory_where_a_file_is_expected(self, run_dir: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
        """An output that is a directory (or sits under a file) is one clear line, exit 2: no raw errno, no tmp."""
        run = _copy(run_dir, tmp_path)
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        done = simworld(*(a.format(run=run, tmp=tmp_path) for a in args))
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Errno" not in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert "is a directory, not a file" in done.stderr or "is a file, not a directory" in done.stderr
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


class TestStaleTemporaryFiles:
    def test_next_export_removes_a_killed_exports_tmp(self, run_dir: Path, tmp_path: Path) -> None:
        """The .NAME.tmp a killed export leaves is gone after the next export to that file, whose output is whole."""
        fresh = tmp_path / "fresh.jsonl"
        assert simworld("export", str(run_dir), "--out", str(fresh)).returncode == 0
        out = tmp_path / "x.jsonl"
        stale = tmp_path / ".x.jsonl.tmp"
        stale.write_bytes(fresh.read_bytes()[:1000] + b"\n" + b"garbage " * 50_000)  # half an export, then junk
        done = simworld("export", str(run_dir), "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert not stale.exists() and out.read_bytes() == fresh.read_bytes()

    def test_stale_tmp_that_is_a_symlink_is_not_written_through(self, run_dir: Path, tmp_path: Path) -> None:
        """A stale .NAME.tmp that points elsewhere is replaced, never followed: the file it points at is untouched."""
        victim = tmp_path / "victim.txt"
        victim.write_bytes(b"keep me\n")
        (tmp_path / ".x.jsonl.tmp").symlink_to(victim)
        done = simworld("export", str(run_dir), "--out", str(tmp_path / "x.jsonl"))
        assert done.returncode == 0, done.stderr
        assert victim.read_bytes() == b"keep me\n" and not (tmp_path / "x.jsonl").is_symlink()
        assert not (tmp_path / ".x.jsonl.tmp").exists() and not (tmp_path / ".x.jsonl.tmp").is_symlink()

    def test_failed_atomic_write_leaves_no_tmp(self, tmp_path: Path) -> None:
        """A write whose rename fails (the destination is a directory) removes its temporary file."""
        from simworld._world.events import write_atomic

        (tmp_path / "d").mkdir()
        with pytest.raises(IsADirectoryError):
            write_atomic(tmp_path / "d", b"x")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


class TestCorruptedResults:
    def _corrupt(self, run: Path) -> None:
        lines = (run / "results.jsonl").read_bytes().splitlines()
        lines[1] = b'{"scenario": "waive-small-fee", "se'
        (run / "results.jsonl").write_bytes(b"\n".join(lines) + b"\n")

    def test_export_names_the_line_and_writes_nothing(self, run_dir: Path, tmp_path: Path) -> None:
        """A corrupted middle line: export names it and stops, and leaves no partial output file."""
        run = _copy(run_dir, tmp_path)
        self._corrupt(run)
        out = tmp_path / "x.jsonl"
        done = simworld("export", str(run), "--out", str(out))
        assert done.returncode == 2 and "results.jsonl:2" in done.stderr and "Traceback" not in done.stderr
        assert not out.exists() and not list(tmp_path.glob(".x.jsonl*"))

    def test_skip_bad_lines_counts_them(self, run_dir: Path, tmp_path: Path) -> None:
        """--skip-bad-lines exports the rest and says how many lines it skipped."""
        run = _copy(run_dir, tmp_path)
        self._corrupt(run)
        out = tmp_path / "x.jsonl"
        done = simworld("export", str(run), "--out", str(out), "--skip-bad-lines")
        assert done.returncode == 0 and "skipped 1 result line" in done.stderr
        assert out.read_bytes().count(b"\n") == 3


class TestReplay:
    def test_header_seed_not_an_int(self, run_dir: Path, tmp_path: Path) -> None:
        """An event file whose header seed is not an int is one clear line, exit 2."""
        path = tmp_path / "e.jsonl"
        lines = (run_dir / "events" / f"{SID}__seed-0.jsonl").read_bytes().splitlines()
        header = orjson.loads(lines[0])
        header["seed"] = "zero"
        path.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
        done = simworld("replay", str(path))
        assert done.returncode == 2 and "seed" in done.stderr and "Traceback" not in done.stderr

    def test_edited_read_result_is_caught(self, run_dir: Path, tmp_path: Path) -> None:
        """A read result edited in the log does not replay to what is recorded: replay says so, exit 2."""
        path = tmp_path / "e.jsonl"
        lines = (run_dir / "events" / f"{SID}__seed-0.jsonl").read_bytes().splitlines()
        edited = []
        done_one = False
        for raw in lines:
            record = orjson.loads(raw)
            if not done_one and record.get("record") == "event" and record.get("kind") == "read":
                record["result"] = {"forged": True}
                done_one = True
            edited.append(orjson.dumps(record))
        assert done_one
        path.write_bytes(b"\n".join(edited) + b"\n")
        done = simworld("replay", str(path))
        assert done.returncode == 2 and "not the recorded" in done.stderr
