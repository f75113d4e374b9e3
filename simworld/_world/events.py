"""The event log: one record per tool call or text the agent wrote, written as JSON lines.

An event file starts with a header line (scenario, seed, snapshot, initial state
hash, the conversation's contract version), has one line per call (seq, simulated
time, tool, args, result, status, latency; a text the agent wrote to the customer is an
event of kind ``say`` whose args are ``{"text": ...}``, with the seq of the call it comes
before) and ends with a footer (outcome, stop reason, counters, final state hash).
If the agent crashed (a recovery scenario), a crash record sits where it died,
carrying the call whose effect landed but which the session log lost, if any. Every
line is canonical JSON (sorted keys) so the same episode writes the same bytes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import attrs
import orjson

from simworld._world.hashing import blake2b
from simworld._world.state import canonical_bytes
from simworld.errors import ReplayError

__all__ = ["Event", "EventFile", "Status", "event_file_bytes", "event_lines", "events_hash", "lines_hash",
           "read_events", "write_events"]

Status = Literal["ok", "error", "denied"]


@attrs.frozen
class Event:
    """One tool call (what was asked, what came back, and when in simulated time), or one text the agent wrote
    (``kind == "say"``: ``args`` is ``{"text": ...}``, ``tool`` is empty, ``result`` None)."""

    seq: int
    at: str
    tool: str
    args: Any
    result: Any
    status: Status
    latency: float
    kind: str

    def to_json(self) -> dict[str, Any]:
        """The event as JSON values, tagged ``"record": "event"``."""
        return {"record": "event", "seq": self.seq, "at": self.at, "tool": self.tool, "kind": self.kind,
                "args": self.args, "result": self.result, "status": self.status, "latency": self.latency}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        """Rebuild an event from its JSON line."""
        return cls(data["seq"], data["at"], data["tool"], data["args"], data["result"], data["status"],
                   data["latency"], data["kind"])


def event_lines(events: Iterable[Event]) -> list[bytes]:
    """Each event's line in an event file: its canonical JSON (what :func:`events_hash` covers, too)."""
    return [canonical_bytes(e.to_json()) for e in events]


def lines_hash(lines: Iterable[bytes]) -> str:
    """The events hash of events already made into lines (see :func:`event_lines`)."""
    h = blake2b(digest_size=16)
    for line in lines:
        h.update(line)
        h.update(b"\n")
    return h.hexdigest()


def events_hash(events: Iterable[Event]) -> str:
    """A hash of the events alone (not header or footer), in order."""
    return lines_hash(event_lines(events))


def write_events(path: Path, header: dict[str, Any], events: Iterable[Event], footer: dict[str, Any],
                 crash: dict[str, Any] | None = None) -> None:
    """Write an episode's event file atomically; a crash record, if any, sits where the agent died."""
    write_atomic(path, event_file_bytes(header, events, footer, crash))


def event_file_bytes(header: dict[str, Any], events: Iterable[Event], footer: dict[str, Any],
                     crash: dict[str, Any] | None = None, *, lines: list[bytes] | None = None) -> bytes:
    """An episode's event file, as bytes (a worker on another machine sends these back to the run).

    ``lines``, the events already made into lines (:func:`event_lines`), spares making them again.
    """
    listed = event_lines(events) if lines is None else lines
    out = [canonical_bytes({"record": "header", **header}), *listed]
    spots = range(len(listed) + 1)  # where a crash record may sit: before an event, or after the last
    if crash is not None and crash["position"] in spots:
        out.insert(1 + spots.index(crash["position"]), canonical_bytes({"record": "crash", **crash}))
    out.append(canonical_bytes({"record": "footer", **footer}))
    out.append(b"")
    return b"\n".join(out)


def temp_path(path: str | os.PathLike[str]) -> str:
    """The temporary file a write to ``path`` goes through: ``.NAME.tmp`` beside it.

    One name per destination, so a write killed before its rename (``kill -9``) leaves a
    file that is plainly stale and that the next write to the same destination removes.
    """
    head, name = os.path.split(os.fspath(path))
    return os.path.join(head, f".{name}.tmp")


def open_temp(tmp: str) -> int:
    """A new, empty file at ``tmp`` opened for writing; a stale one (a killed write's) is removed first.

    Never follows a symlink there: a stale name pointing elsewhere is replaced, not written through.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(tmp, flags, 0o666)
    except FileExistsError:
        os.unlink(tmp)
        return os.open(tmp, flags, 0o666)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the file descriptor ``fd`` (a regular file takes it in one call; the loop only
    guards against a short write)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomic(path: str | os.PathLike[str], data: bytes, *, tmp: str | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: a kill never leaves half a file.

    A failed write removes its temporary file; a killed one's is removed by the next write to ``path`` through
    the same temporary file. ``tmp`` names it when one per destination (:func:`temp_path`) will not do: writers
    in several processes that may write the same file at once each need their own (the end-state cache's; a
    killed writer's is removed, with the least recently used files, when its folder is trimmed).
    """
    target = os.fspath(path)
    tmp = temp_path(target) if tmp is None else tmp
    fd = open_temp(tmp)  # no buffered file object: one per episode
    try:
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@attrs.frozen
class EventFile:
    """A parsed event file."""

    header: dict[str, Any]
    events: tuple[Event, ...]
    footer: dict[str, Any]
    crash: dict[str, Any] | None = None


def read_events(path: Path) -> EventFile:
    """Parse an event file, naming the line of any problem."""
    try:
        raw = path.read_bytes().splitlines()
    except OSError:
        raise ReplayError(f"Event file {str(path)!r} not found.") from None
    header: dict[str, Any] | None = None
    footer: dict[str, Any] = {}
    crash: dict[str, Any] | None = None
    events: list[Event] = []
    for n, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
            record = data.pop("record")
            if record == "header":
                header = data
            elif record == "footer":
                footer = data
            elif record == "event":
                events.append(Event.from_json(data))
            elif record == "crash":
                if data.get("lost") is not None:
                    lost = dict(data["lost"])
                    lost.pop("record", None)
                    data["lost"] = Event.from_json(lost)
                crash = data
            else:
                raise KeyError(record)
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise ReplayError(f"{path.name}:{n}: not an event line ({type(exc).__name__}: {exc}).") from None
    if header is None:
        raise ReplayError(f"{path.name}: no header line; an event file starts with {{\"record\": \"header\", ...}}.")
    return EventFile(header, tuple(events), footer, crash)
