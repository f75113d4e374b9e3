"""Trajectory export: native, OpenAI chat fine-tuning and Hugging Face TRL JSON lines.

``simworld export RUN_DIR --format native|openai|trl`` reads a run's ``results.jsonl``
line by line and, for each selected episode, its event log, and writes one line per
episode: it streams, so memory does not grow with the run. The same run exports the
same bytes (canonical JSON, sorted keys), on one process or on ``--workers N``.

Formats (schemas in ``simworld/schemas/``):

- ``native``: scenario, seed, agent, policy text, request, tool names, every call (args,
  result, status, simulated time) and every text the agent wrote (``kind: "say"``, args
  ``{"text": ...}``) in order, outcome, the grade and the conversation's contract version;
- ``openai``: OpenAI's chat fine-tuning line with tools: ``messages``, the conversation
  the model was shown (:func:`simworld._agents.chat.conversation`: system = the rules of
  the conversation and the policy, user = request, one assistant turn per call with
  ``tool_calls`` whose ``function.arguments`` is a JSON string and the text written with
  it as ``content``, one ``tool`` turn per result with ``tool_call_id`` and string
  content, text written alone as an assistant turn of its own), a top-level ``tools``
  array and ``parallel_tool_calls: false``. The line ends with the terminal call, or the
  final plain reply;
- ``trl``: TRL's conversational format: ``messages`` whose assistant tool calls carry
  ``arguments`` as objects, ``tool`` turns with ``name`` and ``content``, and a ``tools``
  column of JSON schemas.

Nothing of the grading side reaches a training line: no expected state (a native line's
``state_diff`` keeps the paths, not the expected values), no solution, no grader, and no
holdout episode at all (they are skipped and counted).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import mmap
import multiprocessing
import os
from collections.abc import Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import attrs
import orjson

from simworld._agents.chat import conversation, system_for
from simworld._episode.contract import CONTRACT_VERSION
from simworld._running.job import event_file_name
from simworld._running.rundir import EVENTS, RESULTS, ResultsFile, numbered_lines, parse_results
from simworld._world.events import Event, read_events
from simworld._world.hashing import blake2b
from simworld._world.splits import is_holdout
from simworld._world.state import canonical_bytes
from simworld._world.tools import TOOLS
from simworld.errors import SimworldError

__all__ = ["FORMATS", "ExportReport", "Trajectory", "export_run", "line", "native_hook", "openai_hook", "trl_hook"]

FORMATS = ("native", "openai", "trl")
_CHUNK_LINES = 128  # result lines a slice: one write to ``out``, one task for a worker
_SLOT_BYTES = 32 << 20  # the shared memory a worker's slice of lines goes back through
_GRADE_KEYS = ("passed", "total", "parts", "outcome_class_correct", "step_scores", "order_violations",
               "unauthorised_actions", "forbidden_changes", "checks", "counters")


class ExportError(SimworldError, ValueError):
    """A run directory or an export option that cannot be exported."""


@attrs.frozen
class Trajectory:
    """What one episode contributes to training data, from an event file or a live episode."""

    scenario: str
    seed: int
    agent: str
    request: str
    policy: str
    tools: tuple[str, ...]
    events: tuple[Event, ...]
    outcome: str | None
    stop_reason: str
    error: str | None
    result: dict[str, Any]
    contract: str | None = CONTRACT_VERSION

    @classmethod
    def from_episode(cls, episode: Any, result: dict[str, Any]) -> Trajectory:
        """The trajectory of a live, sealed episode and its result line."""
        return cls(episode.scenario, episode.seed, episode.agent, episode.request, episode.policy_text,
                   tuple(episode.tools), tuple(episode.events), episode.outcome, episode.stop_reason, episode.error,
                   result)


@functools.lru_cache(maxsize=64)
def _tool_specs(names: tuple[str, ...]) -> bytes:
    """The ``tools`` column of ``names``, as canonical JSON (the same for every line of a run)."""
    return canonical_bytes([{"type": "function", "function": TOOLS[n].schema()} for n in names if n in TOOLS])


# A line is built from an episode's parts as an event file holds them: the header (scenario, seed, agent,
# request, policy, tools), the event records in order (dicts with seq, at, tool, kind, args, result, status,
# latency), the footer (outcome, stop_reason, error) and the result line.

def native(h: dict[str, Any], events: list[dict[str, Any]], f: dict[str, Any], result: dict[str, Any]) -> bytes:
    """The native line: the whole episode and its grade, without expected values."""
    grade = {k: result[k] for k in _GRADE_KEYS if k in result}
    grade["state_diff"] = [d["path"] for d in result.get("state_diff", [])]
    return canonical_bytes({
        "format": "simworld.native/1", "scenario": h["scenario"], "seed": int(h["seed"]),
        "agent": str(h.get("agent", "?")), "policy": h["policy"], "request": h["request"],
        "tools": list(h.get("tools", ())),
        "calls": [{"seq": e["seq"], "at": e["at"], "tool": e["tool"], "kind": e["kind"], "args": e["args"],
                   "result": e["result"], "status": e["status"], "latency": e["latency"]} for e in events],
        "outcome": f.get("outcome"), "stop_reason": f.get("stop_reason", ""), "error": f.get("error"),
        "grade": grade, "state_hash": result.get("state_hash"), "events_hash": result.get("events_hash"),
        "contract": h.get("contract"),
    }) + b"\n"


def _messages(h: dict[str, Any], events: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """The chat turns of an episode in ``fmt`` (openai or trl): the conversation the model was shown."""
    return conversation(system_for(h["policy"], h.get("contract")), h["request"], events, fmt)


# The outer keys are fixed, so a chat line is spliced from canonical parts: the same bytes as canonical_bytes
# of the whole object (sorted keys, no whitespace), with the run's tools encoded once.

def openai(h: dict[str, Any], events: list[dict[str, Any]], f: dict[str, Any], result: dict[str, Any]) -> bytes:
    """The OpenAI chat fine-tuning line (arguments and tool results as JSON strings)."""
    return b"".join((b'{"messages":', canonical_bytes(_messages(h, events, "openai")),
                     b',"parallel_tool_calls":false,"tools":', _tool_specs(tuple(h.get("tools", ()))), b"}\n"))


def trl(h: dict[str, Any], events: list[dict[str, Any]], f: dict[str, Any], result: dict[str, Any]) -> bytes:
    """The TRL conversational line (arguments as objects, tool turns named)."""
    return b"".join((b'{"messages":', canonical_bytes(_messages(h, events, "trl")), b',"tools":',
                     _tool_specs(tuple(h.get("tools", ()))), b"}\n"))


_BUILD = {"native": native, "openai": openai, "trl": trl}


def line(t: Trajectory, fmt: str) -> bytes:
    """One canonical JSON line of ``t`` in format ``fmt``."""
    h = {"scenario": t.scenario, "seed": t.seed, "agent": t.agent, "request": t.request, "policy": t.policy,
         "tools": t.tools, "contract": t.contract}
    f = {"outcome": t.outcome, "stop_reason": t.stop_reason, "error": t.error}
    return _BUILD[fmt](h, [e.to_json() for e in t.events], f, t.result)


def _from_file(path: Path, result: dict[str, Any]) -> Trajectory:
    log = read_events(path)
    events = list(log.events)
    crash = log.crash
    if crash is not None and crash.get("lost") is not None:
        events.insert(int(crash["position"]), crash["lost"])  # the call happened; only the session log lost it
    h, f = log.header, log.footer
    if "request" not in h:
        raise ExportError(f"{path.name}: no request in the header; re-run with this version of simworld to export.")
    return Trajectory(h["scenario"], int(h["seed"]), str(h.get("agent", "?")), h["request"], h["policy"],
                      tuple(h.get("tools", ())), tuple(events), f.get("outcome"), f.get("stop_reason", ""),
                      f.get("error"), result, h.get("contract"))


_EVENT_KEYS = frozenset(("seq", "at", "tool", "args", "result", "status", "latency", "kind"))


def _parts(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """An event file's header, events (a crash's lost call in its place) and footer, as parsed dicts.

    Anything :func:`read_events` would not read the same way raises (KeyError, TypeError or ValueError).
    """
    header: dict[str, Any] | None = None
    footer: dict[str, Any] = {}
    crash: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    for raw in data.splitlines():
        d = orjson.loads(raw)
        record = d["record"]
        if record == "event":
            if not d.keys() >= _EVENT_KEYS:
                raise KeyError("event")
            events.append(d)
        elif record == "header":
            header = d
        elif record == "footer":
            footer = d
        elif record == "crash":
            crash = d
        else:
            raise KeyError(record)
    if header is None or "request" not in header:
        raise KeyError("header")
    if crash is not None and crash.get("lost") is not None:
        lost = crash["lost"]
        if not (isinstance(lost, dict) and lost.keys() >= _EVENT_KEYS):
            raise KeyError("lost")
        events.insert(int(crash["position"]), lost)  # the call happened; only the session log lost it
    return header, events, footer


_RESULT_FOLLOWS = b',"record":"event","result":'


def _spliced(data: bytes, events_hash: Any) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]] | None:
    """:func:`_parts` with each call's result left as its bytes, when the file is provably as simworld wrote it.

    The event lines must hash to the result line's ``events_hash``, which is taken of exactly
    those lines: then each is ``canonical_bytes`` of an event (keys sorted, no whitespace), its
    ``result`` sits between ``"record":"event"`` and ``"seq"``, and those bytes are the
    result's canonical JSON, which every format writes unchanged (an ``orjson.Fragment``, or
    the text of a tool turn). Anything else (a crash record, a file edited since, the marker
    also inside the arguments) gives None, and the file is parsed whole.
    """
    lines = data.split(b"\n")
    if len(lines) < 3 or lines[-1] or not isinstance(events_hash, str):
        return None
    body = lines[1:-2]
    # The event lines, each with its newline, are the bytes between the header's line and the footer's.
    if blake2b(data[len(lines[0]) + 1:len(data) - len(lines[-2]) - 1], digest_size=16).hexdigest() \
            != events_hash:
        return None
    header, footer = orjson.loads(lines[0]), orjson.loads(lines[-2])
    if header.get("record") != "header" or "request" not in header or footer.get("record") != "footer":
        return None
    events = []
    for raw in body:
        at = raw.find(_RESULT_FOLLOWS)
        seq = raw.rfind(b',"seq":')
        if at < 0 or seq < at or raw.find(_RESULT_FOLLOWS, at + 1) >= 0:
            return None
        event = orjson.loads(raw[:at] + raw[seq:])  # args, at, kind, latency, seq, status, tool
        event["result"] = orjson.Fragment(raw[at + len(_RESULT_FOLLOWS):seq])
        events.append(event)
    return header, events, footer


def _read(path: str) -> bytes:
    """The bytes of the file at ``path``, read in one call of its size (no buffered file object, no big buffer)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, os.fstat(fd).st_size + 1)
        while more := os.read(fd, 1 << 13):  # only if the file grew since fstat
            data += more
    finally:
        os.close(fd)
    return data


def _episode_line(run_dir: Path, prefix: str, result: dict[str, Any], fmt: str) -> bytes:
    """The line of one episode; an event file the fast reader refuses is read again line by line, which names
    the problem (or, if it reads, writes the same line)."""
    name = event_file_name(result["scenario"], int(result["seed"]), int(result.get("trial", 0)))
    try:
        data = _read(prefix + name)
        h, events, f = _spliced(data, result.get("events_hash")) or _parts(data)
        return _BUILD[fmt](h, events, f, result)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return line(_from_file(run_dir / EVENTS / name, result), fmt)


@attrs.frozen
class ExportReport:
    """How many episodes a run had, and how many were written or left out, and why."""

    written: int
    filtered: int
    holdout_skipped: int
    harness_errors: int = 0
    bad_lines: int = 0


@attrs.frozen
class _Options:
    """What an export selects and writes, as each worker process needs it."""

    run_dir: Path
    fmt: str
    passed_only: bool
    min_score: float | None
    scenarios: tuple[str, ...]
    skip_bad_lines: bool


@attrs.frozen
class _Chunk:
    """A slice of result lines done: its lines, its counts, and the error that stopped it, if one did."""

    data: bytes | memoryview
    written: int
    filtered: int
    holdout: int
    broken: int
    bad: list[int]
    error: Exception | None


def _export_chunk(o: _Options, lines: list[tuple[int, bytes]]) -> _Chunk:
    """Export some numbered result lines; an error is returned with the lines before it, to be raised in order."""
    written = filtered = holdout = broken = 0
    bad: list[int] = []
    parts: list[bytes] = []
    prefix = os.path.join(o.run_dir, EVENTS, "")
    error: Exception | None = None
    try:
        for r in parse_results(o.run_dir / RESULTS, lines, skip_bad=bad if o.skip_bad_lines else None):
            keep = ((not o.passed_only or r["passed"]) and (o.min_score is None or r["total"] >= o.min_score)
                    and (not o.scenarios or r["scenario"] in o.scenarios))
            if is_holdout(int(r["seed"])):
                holdout += 1
            elif r.get("harness_error") is not None:
                broken += 1  # the harness failed this episode: not a trajectory to learn from
            elif not keep:
                filtered += 1
            else:
                parts.append(_episode_line(o.run_dir, prefix, r, o.fmt))
                written += 1
    except Exception as exc:  # raised by export_run once the lines before it are written
        error = exc
    return _Chunk(b"".join(parts), written, filtered, holdout, broken, bad, error)


def _slices(lines: Iterable[tuple[int, bytes]]) -> Iterator[list[tuple[int, bytes]]]:
    """``lines`` in lists of :data:`_CHUNK_LINES`."""
    it = iter(lines)
    while chunk := list(itertools.islice(it, _CHUNK_LINES)):
        yield chunk


_shared: mmap.mmap | None = None  # in a worker process: the memory it hands its slices' lines back through


def _attach(shared: mmap.mmap) -> None:
    """Pool initializer: the worker is one of simworld's (:func:`~simworld._running.executors.as_worker`: it
    dies with its parent and ends at SIGTERM) and keeps the shared memory it writes its slices to."""
    global _shared
    from simworld._running.executors import as_worker  # loaded by the parent before it forked

    as_worker()
    _shared = shared


def _export_into(o: _Options, lines: list[tuple[int, bytes]], slot: int) -> tuple[_Chunk, int]:
    """:func:`_export_chunk` in a worker: the lines go to shared slot ``slot`` (size returned), or by pipe if big."""
    c = _export_chunk(o, lines)
    size = len(c.data)
    if _shared is None or size > _SLOT_BYTES:
        return c, -1
    _shared[slot * _SLOT_BYTES:slot * _SLOT_BYTES + size] = c.data
    return attrs.evolve(c, data=b""), size


def _in_workers(o: _Options, slices: Iterator[list[tuple[int, bytes]]], workers: int) -> Generator[_Chunk, None, None]:
    """The slices done by ``workers`` forked processes, in order, at most 2N+1 in flight (flat memory).

    A slice's lines come back through memory shared with the workers (a pipe would copy them several times):
    slice i goes to slot i mod 2N+1, which is free again once slice i-2N-1 has been copied out.

    A worker that dies (the kernel's OOM killer, ``kill -9``) loses nothing and stops nothing: the slices it and
    its pool had not returned, and every slice after them, are done in this process, and the export writes the
    same bytes. (multiprocessing's Pool waited forever for a dead worker's slice.)
    """
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    import simworld._running.executors  # noqa: F401  (for _attach: imported once, before the fork)

    slots = 2 * workers + 1
    shared = mmap.mmap(-1, slots * _SLOT_BYTES)
    pool: ProcessPoolExecutor | None = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"), initializer=_attach, initargs=(shared,))
    pending: collections.deque[tuple[int, Future[Any] | None, list[tuple[int, bytes]]]] = collections.deque()

    def settled(view: memoryview) -> _Chunk:
        nonlocal pool
        slot, result, chunk = pending.popleft()
        if result is not None and pool is not None:
            try:
                return _returned(view, slot, result)
            except BrokenProcessPool:  # a worker died: this process does the rest
                pool.shutdown(wait=False, cancel_futures=True)
                pool = None
        return _export_chunk(o, chunk)

    try:
        with shared, memoryview(shared) as view:
            for i, chunk in enumerate(slices):
                if pool is None:
                    pending.append((0, None, chunk))
                else:
                    slot = i % slots
                    try:
                        pending.append((slot, pool.submit(_export_into, o, chunk, slot), chunk))
                    except BrokenProcessPool:
                        pool.shutdown(wait=False, cancel_futures=True)
                        pool = None
                        pending.append((0, None, chunk))
                if len(pending) >= slots or pool is None:
                    yield from _handed_out(settled(view))
            while pending:
                yield from _handed_out(settled(view))
    finally:  # done, or stopped by an error or the caller: the slices in flight end, no new one starts
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _handed_out(c: _Chunk) -> Generator[_Chunk, None, None]:
    """Yield ``c``; once the caller is done with it, let go of its view of the shared memory."""
    try:
        yield c
    finally:
        if isinstance(c.data, memoryview):
            c.data.release()


def _returned(view: memoryview, slot: int, result: Any) -> _Chunk:
    """A slice done, its lines a view of its slot: written out before the slot takes another slice (the next one
    is handed out only when the caller asks for the next chunk)."""
    c, size = result.result()
    return c if size < 0 else attrs.evolve(c, data=view[slot * _SLOT_BYTES:slot * _SLOT_BYTES + size])


def export_run(run_dir: Path, fmt: str, out: IO[bytes], *, passed_only: bool = False, min_score: float | None = None,
               scenarios: Sequence[str] = (), skip_bad_lines: bool = False, workers: int = 1) -> ExportReport:
    """Stream the run's selected episodes to ``out`` in ``fmt``; ``workers`` processes build the lines (same bytes)."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is unknown; use one of {', '.join(FORMATS)}.")
    if min_score is not None and not 0.0 <= min_score <= 1.0:
        raise ExportError(f"--min-score {min_score!r} must lie between 0 and 1 (it is compared with 'total').")
    if workers < 1:
        raise ExportError(f"--workers {workers!r} must be at least 1.")
    results_path = run_dir / RESULTS
    if not results_path.is_file():
        raise ExportError(f"{run_dir}: no results.jsonl; pass a directory written by simworld run.")
    o = _Options(run_dir, fmt, passed_only, min_score, tuple(scenarios), skip_bad_lines)
    slices = _slices(numbered_lines(results_path))
    written = filtered = holdout = broken = 0
    bad: list[int] = []
    done: Generator[_Chunk, None, None] = ((_export_chunk(o, s) for s in slices) if workers == 1
                                           else _in_workers(o, slices, workers))
    with contextlib.closing(done):  # an error stops the workers at once
        for c in done:
            if c.data:
                out.write(c.data)
            written += c.written
            filtered += c.filtered
            holdout += c.holdout
            broken += c.broken
            bad += c.bad
            if c.error is not None:
                raise c.error
    return ExportReport(written, filtered, holdout, broken, len(bad))


# -- post_run hooks: write the export while a run goes ---------------------------------------------------------

def _hook(fmt: str, episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    # A new run starts from an empty directory (simworld run refuses or clears an old one), so the hook
    # appends: a resumed run adds to what it wrote before. The episode being written when a run was
    # killed may appear twice in a resumed run's hook file; `simworld export`, which reads results.jsonl,
    # never repeats one.
    if out_dir is None or is_holdout(episode.seed):
        return
    with ResultsFile(Path(out_dir) / f"export.{fmt}.jsonl") as f:  # one whole line per write; cuts a partial tail
        f.append(line(Trajectory.from_episode(episode, result), fmt))


def native_hook(episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    """post_run hook: append the episode to ``OUT/export.native.jsonl``."""
    _hook("native", episode, result, out_dir)


def openai_hook(episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    """post_run hook: append the episode to ``OUT/export.openai.jsonl``."""
    _hook("openai", episode, result, out_dir)


def trl_hook(episode: Any, result: dict[str, Any], out_dir: Path | None) -> None:
    """post_run hook: append the episode to ``OUT/export.trl.jsonl``."""
    _hook("trl", episode, result, out_dir)
