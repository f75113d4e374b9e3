"""A run directory on disk: written as the run goes, readable at any instant, resumable, mergeable.

Layout::

    run.json        written first ("status": "running", the arguments, versions and the grid)
                    and rewritten at the end ("status": "complete", wall time, pass^k); always
                    replaced atomically, so it is never half written
    results.jsonl   one canonical line per graded episode, appended with a single write and
                    flushed to the operating system as soon as the episode is graded
    events/         one event log per episode, written (atomically) before its result line

So a run killed at any instant leaves whole event files, whole result lines except
perhaps a trailing partial one (readers skip it; ``--resume`` cuts it off), and a
run.json that says the run is incomplete. The result lines of a run are kept in the
order of its grid, (scenario, seed, trial); a resumed or merged run is rewritten in
that order when it completes, so its bytes equal an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from simworld._world.events import open_temp, temp_path, write_all, write_atomic
from simworld.errors import RunDirError

__all__ = ["EVENTS", "META", "RESULTS", "Key", "ResultsFile", "atomic_output", "check_output_dir", "check_output_file",
           "describe_status", "line_key",
           "numbered_lines", "parse_results", "read_meta", "read_results", "redact", "refuse_own_input",
           "rewrite_in_order", "write_meta"]

META = "run.json"
RESULTS = "results.jsonl"
EVENTS = "events"
#: A result line's place in the grid: (scenario id, seed as run, trial).
Key = tuple[str, int, int]
#: Files in OUT that belong to a run (besides events/): what --overwrite removes.
RUN_FILES = (META, RESULTS, "regraded.jsonl", "export.native.jsonl", "export.openai.jsonl", "export.trl.jsonl")


_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")


def redact(value: Any) -> Any:
    """``value`` with the credentials of every URL in it (``https://user:key@host``) replaced by ``***``.

    Applied to everything simworld records about how a run was invoked, so no secret passed in a URL
    reaches run.json.
    """
    if isinstance(value, str):
        return _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", value)
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    return value


def line_key(line: Mapping[str, Any]) -> Key:
    """The grid key of a result line."""
    return (str(line["scenario"]), int(line["seed"]), int(line.get("trial", 0)))


def write_meta(out: Path, meta: dict[str, Any]) -> None:
    """Write run.json atomically (sorted keys, indented)."""
    write_atomic(out / META, orjson.dumps(meta, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def read_meta(run_dir: Path) -> dict[str, Any] | None:
    """The run's run.json, or None when there is none."""
    path = run_dir / META
    if not path.is_file():
        return None
    try:
        meta = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise RunDirError(f"{path}: not valid JSON ({exc}); it was not written by simworld run.") from None
    if not isinstance(meta, dict):
        raise RunDirError(f"{path}: expected a JSON object but got {type(meta).__name__}.")
    return meta


def _whole_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(offset, line without its newline) for every whole line; a trailing partial line is skipped."""
    offset, tail = 0, b""
    with path.open("rb") as f:
        while block := f.read(1 << 20):  # a megabyte at a time: far cheaper than line by line
            *lines, tail = (tail + block).split(b"\n")  # the tail has no newline (yet): cut off by a kill mid-write
            for raw in lines:
                if raw.strip():
                    yield offset, raw
                offset += len(raw) + 1


def read_results(path: Path, *, skip_bad: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """Every whole result line of ``path`` (a results.jsonl), parsed; a trailing partial line is skipped.

    A line that is not a JSON object is a RunDirError naming its number, unless ``skip_bad`` is
    given: then its number is appended there and reading goes on.
    """
    if path.is_file():
        yield from parse_results(path, numbered_lines(path), skip_bad=skip_bad)


def numbered_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(number from 1, line) for every whole non-blank line of ``path``, as :func:`read_results` numbers them."""
    return enumerate((raw for _offset, raw in _whole_lines(path)), 1)


def parse_results(path: Path, lines: Iterable[tuple[int, bytes]], *,
                  skip_bad: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """:func:`read_results` of some :func:`numbered_lines` of ``path`` (e.g. a slice handed to another process)."""
    for n, raw in lines:
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            line = None
        if not isinstance(line, dict) or "scenario" not in line or "seed" not in line:
            if skip_bad is not None:
                skip_bad.append(n)
                continue
            raise RunDirError(f"{path}:{n}: not a result line (corrupted?); fix or delete it, or pass "
                              "--skip-bad-lines to skip such lines and count them.")
        yield line


def index_results(path: Path) -> dict[Key, tuple[int, int]]:
    """Where each key's line is in ``path``: key -> (offset, length with newline). The first line of a key wins."""
    index: dict[Key, tuple[int, int]] = {}
    if not path.is_file():
        return index
    for offset, raw in _whole_lines(path):
        key = line_key(orjson.loads(raw))
        index.setdefault(key, (offset, len(raw) + 1))
    return index


def rewrite_in_order(path: Path, order: Iterable[Key], sources: Sequence[Path] = ()) -> int:
    """Rewrite ``path`` with the lines of ``sources`` (default: ``path`` itself) in ``order``; return the count.

    Lines are copied as bytes, never re-serialised, one key at a time (memory holds the
    index, not the lines). Keys with no line are left out; the result replaces ``path``
    atomically.
    """
    sources = tuple(sources) or (path,)
    indexes = [(src, index_results(src)) for src in sources]
    tmp = Path(temp_path(path))
    written = 0
    with contextlib.ExitStack() as stack:
        handles = {src: stack.enter_context(src.open("rb")) for src, _ in indexes}
        out = stack.enter_context(os.fdopen(open_temp(str(tmp)), "wb"))
        for key in order:
            for src, index in indexes:
                where = index.get(key)
                if where is not None:
                    f = handles[src]
                    f.seek(where[0])
                    out.write(f.read(where[1]))
                    written += 1
                    break
    os.replace(tmp, path)
    return written


@contextlib.contextmanager
def atomic_output(path: Path) -> Iterator[Any]:
    """A binary file to write ``path`` through: a temporary file beside it, renamed over ``path`` on success.

    On any failure the temporary file is removed and ``path`` is untouched: never a partial output.
    A write killed outright (``kill -9``) leaves ``.NAME.tmp``, which the next write to ``path`` removes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(temp_path(path))
    try:
        with os.fdopen(open_temp(str(tmp)), "wb") as f:
            yield f
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _blocking_file(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is a file (so ``path`` can never be made), else None."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_file(out: Path, what: str) -> None:
    """Refuse, in one line before any work, an output file path that is a directory or sits under a file."""
    if out.is_dir():
        raise RunDirError(f"{what} {str(out)!r} is a directory, not a file; give the path of a file to write "
                          "(a new name, or a file to replace).")
    blocker = _blocking_file(out)
    if blocker is not None:
        raise RunDirError(f"{what} {str(out)!r}: cannot write it, {str(blocker)!r} is a file, not a directory; "
                          "give a path in an existing directory (or one that can be made).")


def check_output_dir(out: Path, what: str) -> None:
    """Refuse, in one line before any work, an output directory that is a file or sits under a file."""
    if out.exists() and not out.is_dir():
        raise RunDirError(f"{what} {str(out)!r} is a file; give a directory.")
    blocker = _blocking_file(out)
    if blocker is not None:
        raise RunDirError(f"{what} {str(out)!r}: cannot make it, {str(blocker)!r} is a file, not a directory; "
                          "give another directory.")


def refuse_own_input(out: Path, run_dir: Path, what: str) -> None:
    """Refuse an output file path that one of the run's own files (results.jsonl, run.json or an event file) is,
    or that cannot be a file (a directory, such as the run directory itself, or a path under a file)."""
    check_output_file(out, what)
    try:
        target = out.resolve()
        inputs = {(run_dir / RESULTS).resolve(), (run_dir / META).resolve()}
        events = (run_dir / EVENTS).resolve()
    except OSError:
        return
    if target in inputs or target.parent == events:
        raise RunDirError(f"{what} {str(out)!r} is one of {str(run_dir)!r}'s own files, which this command reads; "
                          "write the output elsewhere.")


class ResultsFile:
    """results.jsonl opened for appending: each line goes down in one ``write`` call, straight to the OS.

    On opening, a trailing partial line (a run killed mid-write) is cut off.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        if path.is_file():
            _drop_partial_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, line: bytes) -> None:
        """Append one whole line (``line`` ends with a newline)."""
        write_all(self._fd, line)

    def close(self) -> None:
        """Close the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_partial_tail(path: Path) -> None:
    size = path.stat().st_size
    if size == 0:
        return
    with path.open("rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        # Find the last newline; everything after it is a line the kill cut short.
        pos, keep = size, 0
        while pos > 0:
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                keep = pos + nl + 1
                break
        f.truncate(keep)


def holds_run(out: Path) -> bool:
    """Whether ``out`` already holds (part of) a run."""
    return any((out / name).exists() for name in (META, RESULTS)) or (
        (out / EVENTS).is_dir() and any((out / EVENTS).iterdir()))


def clear_run(out: Path) -> None:
    """Remove a previous run's files from ``out`` (only files a run writes; anything else is left alone)."""
    for name in RUN_FILES:
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()
    events = out / EVENTS
    if events.is_dir():
        for p in events.iterdir():
            if p.is_file() and (p.suffix == ".jsonl" or p.name.endswith(".tmp")):
                p.unlink()


def describe_status(run_dir: Path, meta: dict[str, Any] | None, episodes: int) -> str | None:
    """One line saying that a run is incomplete (killed, or still going), or None when it is complete."""
    if meta is None or meta.get("status") == "complete":  # no run.json: not a simworld run (e.g. serve's output)
        return None
    planned = meta.get("episodes_planned")
    of = f" of {planned}" if planned is not None else ""
    return (f"{run_dir} is an incomplete run (status {meta.get('status', '?')!r}): {episodes}{of} episode(s) "
            "recorded; resume it with the same simworld run command and --resume")


def copy_events(sources: Sequence[Path], out: Path) -> int:
    """Link (or copy) every event file of ``sources``' events/ into ``out/events``; return how many."""
    target = out / EVENTS
    target.mkdir(parents=True, exist_ok=True)
    n = 0
    for src in sources:
        folder = src / EVENTS
        if not folder.is_dir():
            continue
        for p in sorted(folder.glob("*.jsonl")):
            dest = target / p.name
            with contextlib.suppress(FileNotFoundError):
                dest.unlink()
            try:
                os.link(p, dest)
            except OSError:
                import shutil  # here, not at the top: only a merge across file systems needs it

                shutil.copyfile(p, dest)
            n += 1
    return n


def pass_hat_k(successes: Sequence[int], trials: int) -> dict[str, float]:
    """pass^k as tau-bench defines it: the mean over tasks of C(c, k) / C(n, k), for k = 1..n."""
    out = {}
    for k in range(1, trials + 1):
        out[f"pass^{k}"] = round(sum(math.comb(c, k) / math.comb(trials, k) for c in successes) / len(successes), 6)
    return out


#: run.json lists each task's successes up to this many tasks (a sweep of 28 x 50 is 1,400).
MAX_LISTED_TASKS = 2_000


class Tally:
    """Counts a run keeps while it goes, in constant memory per task (not per episode)."""

    def __init__(self) -> None:
        self.episodes = self.passed = self.harness_errors = 0
        self.total = 0.0
        self.tasks: dict[tuple[str, int], int] = {}

    def add(self, line: dict[str, Any]) -> None:
        self.episodes += 1
        self.passed += bool(line["passed"])
        self.harness_errors += line.get("harness_error") is not None
        self.total += float(line["total"])
        key = (line["scenario"], line["seed"])
        self.tasks[key] = self.tasks.get(key, 0) + int(bool(line["passed"]))

    def summary(self, trials: int) -> dict[str, Any]:
        """pass^k, the number of tasks and, up to :data:`MAX_LISTED_TASKS`, each task's successes."""
        out: dict[str, Any] = {
            "pass_hat_k": pass_hat_k(list(self.tasks.values()), trials) if self.tasks else {},
            "task_count": len(self.tasks),
        }
        if len(self.tasks) <= MAX_LISTED_TASKS:  # a sweep's list would only bloat run.json; results.jsonl has it
            out["tasks"] = [{"scenario": s, "seed": seed, "successes": c, "trials": trials}
                            for (s, seed), c in self.tasks.items()]
        return out

    @property
    def mean_total(self) -> float:
        return round(self.total / self.episodes, 4) if self.episodes else 0.0


#: The run.json fields every shard of one sweep shares (the shard itself differs).
SWEEP_FIELDS = ("simworld", "agent", "scenarios", "suite_digest", "snapshot", "seeds", "split", "trials", "settings")


def grid_keys(meta: dict[str, Any]) -> Iterator[Key]:
    """The whole (unsharded) grid a run.json describes, in run order."""
    from simworld._world.splits import effective_seed

    for sid in meta["scenarios"]:
        for seed in meta["seeds"]:
            run_seed = effective_seed(sid, int(seed), str(meta["split"]))
            for trial in range(int(meta["trials"])):
                yield (sid, run_seed, trial)


def _refuse_incomplete_shard(run: Path, meta: Mapping[str, Any], shard: str) -> None:
    """A RunDirError naming the shard (and the cut line) when ``run`` is not a complete shard."""
    path = run / RESULTS
    argv = meta.get("argv")
    command = (f"`simworld {shlex.join(a for a in argv if a != '--overwrite')} --resume`"
               if isinstance(argv, list) and all(isinstance(a, str) for a in argv)
               else "the command that wrote it plus --resume")
    fix = f"finish that shard with {command}, then merge again."
    cut, whole = False, 0
    if path.is_file():
        with path.open("rb") as f:
            if f.seek(0, os.SEEK_END):
                f.seek(-1, os.SEEK_END)
                cut = f.read(1) != b"\n"
        whole = sum(1 for _ in numbered_lines(path))
    if cut:
        raise RunDirError(f"merge: shard {shard} {str(run)!r} is incomplete: {path}:{whole + 1} is cut off (the "
                          f"shard was stopped mid-write, or the file was truncated); {fix}")
    planned, status = meta.get("episodes_planned"), meta.get("status")
    if status != "complete" or (isinstance(planned, int) and whole < planned):
        raise RunDirError(f"merge: shard {shard} {str(run)!r} is incomplete (run.json status {status!r}, {whole} "
                          f"of {planned} result line(s)); {fix}")


def merge_runs(out: Path, runs: Sequence[Path], *, overwrite: bool = False) -> dict[str, Any]:
    """Join the shard directories of one sweep into ``out``; return the merged run.json.

    The shards must share every sweep field of their run.json and be the shards 1..N of
    one N, each once. The merged results.jsonl holds the lines in the order of the whole
    grid, byte for byte as one unsharded run would write them; event files are linked
    (or copied). Every shard must be complete: a shard that was stopped (its run.json not
    ``complete``, fewer result lines than it planned, or a last line cut off mid-write) is
    refused, naming it, so that a merged run never looks finished with episodes missing;
    resuming the shard finishes it.
    """
    if not runs:
        raise RunDirError("merge: name the shard directories to join, e.g. simworld merge OUT shard-1 shard-2.")
    metas = []
    for run in runs:
        meta = read_meta(run)
        if meta is None:
            raise RunDirError(f"merge: {str(run)!r} has no run.json; pass directories written by simworld run --shard.")
        if out.resolve() == run.resolve():
            raise RunDirError(f"merge: OUT {str(out)!r} is also one of the shards; write the merged run elsewhere.")
        metas.append(meta)
    first = metas[0]
    for run, meta in zip(runs[1:], metas[1:], strict=True):
        differ = [f for f in SWEEP_FIELDS if meta.get(f) != first.get(f)]
        if differ:
            raise RunDirError(f"merge: {str(run)!r} is not a shard of the same sweep as {str(runs[0])!r}: "
                              f"its {differ[0]} is {meta.get(differ[0])!r}, not {first.get(differ[0])!r}.")
    shards = []
    for run, meta in zip(runs, metas, strict=True):
        text = meta.get("shard")
        if text is None:
            raise RunDirError(f"merge: {str(run)!r} is not a shard (it ran the whole grid); nothing to merge.")
        i, n = (int(x) for x in str(text).split("/"))
        shards.append((i, n, run))
    counts = {n for _, n, _ in shards}
    if len(counts) != 1:
        given = ", ".join(str(m.get("shard")) for m in metas)
        raise RunDirError(f"merge: the shards split the grid differently ({given}); merge the shards of one "
                          "--shard I/N sweep.")
    n = counts.pop()
    have = sorted(i for i, _, _ in shards)
    if have != list(range(1, n + 1)):
        missing = sorted(set(range(1, n + 1)) - set(have))
        twice = sorted({i for i in have if have.count(i) > 1})
        raise RunDirError(f"merge: the shards must be 1..{n}, each once; " + (
            f"given twice: {', '.join(f'{i}/{n}' for i in twice)}" if twice else
            f"missing {', '.join(f'{i}/{n}' for i in missing)}") + ".")
    for (i, _, run), meta in sorted(zip(shards, metas, strict=True), key=lambda pair: pair[0][0]):
        _refuse_incomplete_shard(run, meta, f"{i}/{n}")
    check_output_dir(out, "merge: OUT")
    if holds_run(out):
        if not overwrite:
            raise RunDirError(f"merge: {str(out)!r} already holds a run; add --overwrite to replace it, or give "
                              "another OUT.")
        clear_run(out)
    out.mkdir(parents=True, exist_ok=True)
    ordered = [run for _, _, run in sorted(shards)]
    copy_events(ordered, out)
    (out / RESULTS).touch()
    planned = sum(1 for _ in grid_keys(first))
    rewrite_in_order(out / RESULTS, grid_keys(first), [run / RESULTS for run in ordered])
    tally = Tally()
    for line in read_results(out / RESULTS):
        tally.add(line)
    trials = int(first["trials"])
    meta = {key: first.get(key) for key in (*SWEEP_FIELDS, "python", "platform")}
    meta.update({
        "status": "complete" if tally.episodes == planned and all(m.get("status") == "complete" for m in metas)
        else "incomplete",
        "shard": None, "merged_from": [m.get("shard") for m in metas], "episodes_planned": planned,
        "episodes": tally.episodes, "passed": tally.passed, "harness_errors": tally.harness_errors,
        "mean_total": tally.mean_total, **tally.summary(trials),
        "wall_seconds": round(sum(float(m.get("wall_seconds", 0.0)) for m in metas), 4),
    })
    write_meta(out, meta)
    return meta
