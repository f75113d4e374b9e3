"""`simworld serve --transport http` per connection: HTTP/1.1 bytes in, the gate's answers out (serve_conn).

Each test feeds raw bytes to one :class:`~simworld._edges.serve_conn.Connection` over a recording transport and a
loop that only records its timers (no socket, no uvicorn, no real time) and reads back exactly what it wrote; the
gate behind it is the real one, over fresh episodes.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import orjson
import pytest

from simworld._edges.serve import EpisodeSessions
from simworld._edges.serve_conn import Connection
from simworld._edges.serve_http import MAX_BODY, HttpGate
from simworld._edges.serve_rpc import Rpc
from simworld._scenario.scenario import load_suite

SCENARIO = "split-balance-three-ways"
SEED = 3
(SPLIT,) = load_suite(None, [SCENARIO])
INIT = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
PING = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"})


class Transport(asyncio.Transport):
    """Records every write; ``on_write`` sees each one as it is made."""

    def __init__(self, on_write: Callable[[bytes], None] | None = None) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.reading = True
        self._on_write = on_write

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))
        if self._on_write is not None:
            self._on_write(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


def request(method: str = "POST", body: bytes = PING, *, sid: str | None = None, extra: str = "",
            version: str = "1.1") -> bytes:
    head = (f"{method} /mcp HTTP/{version}\r\nhost: 127.0.0.1:8000\r\naccept: application/json, text/event-stream\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}")
    if sid is not None:
        head += f"mcp-session-id: {sid}\r\n"
    return head.encode() + b"\r\n" + body


def responses(data: bytes) -> list[tuple[int, dict[bytes, bytes], bytes]]:
    """The responses in ``data``, in order: status, headers, body (read by its content-length)."""
    out = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        status_line, *lines = head.split(b"\r\n")
        headers = dict(line.split(b": ", 1) for line in lines)
        if status_line.split()[1] == b"100":
            out.append((100, headers, b""))
            continue
        length = int(headers[b"content-length"])
        out.append((int(status_line.split()[1]), headers, data[:length]))
        data = data[length:]
    return out


class Timer:
    """A timer the loop below was asked for: its delay and callback, and whether it was cancelled."""

    def __init__(self, delay: float, callback: Callable[[], None]) -> None:
        self.delay, self.callback, self.cancelled = delay, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    """Records the timers a connection sets, to be fired by hand."""

    def __init__(self) -> None:
        self.timers: list[Timer] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        self.timers.append(Timer(delay, callback))
        return self.timers[-1]

    def pending(self) -> list[Timer]:
        return [t for t in self.timers if not t.cancelled]


class Wire:
    """A connection to a fresh gate, with its transport and loop."""

    def __init__(self, out: Path | None = None, keep_alive_s: float = 5.0,
                 on_write: Callable[[bytes], None] | None = None) -> None:
        self.sessions = EpisodeSessions(SPLIT, SEED, out, idle_timeout_s=60.0)
        self.gate = HttpGate(self.sessions, Rpc(self.sessions, "0"))
        self.loop = Loop()
        self.state = SimpleNamespace(connections=set(), default_headers=[], total_requests=0)
        self.conn = Connection(self.gate, config=SimpleNamespace(timeout_keep_alive=keep_alive_s),
                               server_state=self.state, app_state={}, _loop=cast(Any, self.loop))
        self.transport = Transport(on_write)
        self.conn.connection_made(self.transport)

    def feed(self, *chunks: bytes) -> list[tuple[int, dict[bytes, bytes], bytes]]:
        """What the connection answers to ``chunks``, received one after another."""
        before = len(self.transport.writes)
        for chunk in chunks:
            self.conn.data_received(chunk)
        return responses(b"".join(self.transport.writes[before:]))

    def open(self) -> str:
        ((status, headers, _),) = self.feed(request(body=INIT))
        assert status == 200
        return headers[b"mcp-session-id"].decode()


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[Wire]:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    yield Wire()


class TestRequests:
    def test_requests_on_one_connection_are_answered_in_order_each_in_one_write(self, wire: Wire) -> None:
        """Keep-alive: each request is answered with its status, headers and body in a single write, in order, and
        the connection stays open."""
        sid = wire.open()
        writes = len(wire.transport.writes)
        answers = wire.feed(request(sid=sid), request(sid=sid))
        assert [(status, orjson.loads(body)["id"]) for status, _, body in answers] == [(200, 7), (200, 7)]
        assert len(wire.transport.writes) == writes + 2 and not wire.transport.closed
        assert wire.state.total_requests == 3 and wire.state.connections == {wire.conn}

    def test_pipelined_requests_in_one_read_are_all_answered_in_order(self, wire: Wire) -> None:
        """Several requests arriving in one read are each answered, in the order sent."""
        sid = wire.open()
        bodies = [orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) for i in (3, 4, 5)]
        answers = wire.feed(b"".join(request(body=b, sid=sid) for b in bodies))
        assert [orjson.loads(body)["id"] for _, _, body in answers] == [3, 4, 5]

    def test_a_request_in_pieces_is_answered_once_whole(self, wire: Wire) -> None:
        """A request split across reads (even byte by byte) is answered once, when its body is in."""
        sid = wire.open()
        raw = request(sid=sid)
        assert wire.feed(*[raw[i:i + 1] for i in range(len(raw) - 1)]) == []
        ((status, _, body),) = wire.feed(raw[-1:])
        assert status == 200 and orjson.loads(body)["id"] == 7

    def test_a_chunked_body_is_read_whole(self, wire: Wire) -> None:
        """A body sent with Transfer-Encoding: chunked reaches the gate whole."""
        sid = wire.open()
        head = (f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: application/json\r\ncontent-type: "
                f"application/json\r\ntransfer-encoding: chunked\r\nmcp-session-id: {sid}\r\n\r\n").encode()
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (PING[:10], PING[10:])) + b"0\r\n\r\n"
        ((status, _, body),) = wire.feed(head + chunks)
        assert status == 200 and orjson.loads(body)["id"] == 7

    def test_expect_100_continue_is_answered_before_the_body(self, wire: Wire) -> None:
        """A client that waits for 100 Continue before its body gets it when its headers are in."""
        sid = wire.open()
        raw = request(sid=sid, extra="expect: 100-continue\r\n")
        head, body = raw[:raw.index(b"\r\n\r\n") + 4], raw[raw.index(b"\r\n\r\n") + 4:]
        assert [status for status, _, _ in wire.feed(head)] == [100]
        assert [status for status, _, _ in wire.feed(body)] == [200]


class TestClosing:
    def test_http_1_0_and_connection_close_are_answered_then_closed(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An HTTP/1.0 request, or one saying Connection: close, is answered with connection: close, then closed."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        for raw in (request("GET", b"", version="1.0"), request("GET", b"", extra="connection: close\r\n")):
            wire = Wire()
            ((status, headers, _),) = wire.feed(raw)
            assert status == 405 and headers[b"connection"] == b"close" and wire.transport.closed

    def test_a_request_that_is_not_http_is_400_and_closed(self, wire: Wire) -> None:
        """Bytes that do not parse as HTTP are answered 400 and the connection is closed."""
        ((status, headers, body),) = wire.feed(b"NOT HTTP AT ALL\r\n\r\n")
        assert (status, headers[b"connection"], body) == (400, b"close", b"Invalid HTTP request received.")
        assert wire.transport.closed

    def test_a_body_over_the_limit_is_413_and_not_read(self, wire: Wire) -> None:
        """A declared length over MAX_BODY is refused by the gate before the body is read; the connection closes,
        and what the client sends after is ignored."""
        sid = wire.open()
        head = request(body=b"", sid=sid).replace(b"content-length: 0", b"content-length: %d" % (MAX_BODY + 1))
        ((status, _, body),) = wire.feed(head, b"x" * 1000)
        assert status == 413 and b"Request body too large" in body and wire.transport.closed
        assert wire.feed(request(sid=sid)) == []

    def test_a_chunked_body_growing_over_the_limit_is_413(self, wire: Wire) -> None:
        """A chunked body is cut off once it passes MAX_BODY: 413, and the connection closes."""
        sid = wire.open()
        head = (f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: application/json\r\ncontent-type: "
                f"application/json\r\ntransfer-encoding: chunked\r\nmcp-session-id: {sid}\r\n\r\n").encode()
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
        answers = wire.feed(head, *[chunk] * 5)
        assert [status for status, _, _ in answers] == [413] and wire.transport.closed

    def test_an_exception_while_answering_is_500_and_closed(self, wire: Wire,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """A bug in answering a request gets the client a 500 and a closed connection, never silence."""
        sid = wire.open()

        def broken(headers: Any, body: Any) -> Any:
            raise ValueError("a bug")

        monkeypatch.setattr(wire.gate, "post", broken)
        ((status, headers, body),) = wire.feed(request(sid=sid))
        assert (status, headers[b"connection"], body) == (500, b"close", b"Internal Server Error")
        assert wire.transport.closed

    def test_head_is_answered_without_a_body(self, wire: Wire) -> None:
        """HEAD gets the status and headers (with the length a body would have) and no body; the connection is
        kept."""
        wire.feed(request("HEAD", b""))
        (written,) = wire.transport.writes
        head, _, rest = written.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 405 ") and b"content-length: " in head and rest == b""
        assert not wire.transport.closed

    def test_an_idle_connection_is_closed_after_the_keep_alive_time(self, wire: Wire) -> None:
        """Each answer sets one timer of timeout_keep_alive that closes the connection; a request before it fires
        cancels it."""
        sid = wire.open()
        (first,) = wire.loop.pending()
        assert first.delay == 5.0
        wire.feed(request(sid=sid) + request(sid=sid))  # two answers in one read: one timer left, the last one's
        (last,) = wire.loop.pending()
        assert first.cancelled and last is not first and not wire.transport.closed
        last.callback()
        assert wire.transport.closed
        wire.conn.connection_lost(None)
        assert wire.state.connections == set()

    def test_shutdown_closes_the_connection(self, wire: Wire) -> None:
        """When the server stops, every connection is closed (no request is ever half answered)."""
        wire.open()
        wire.conn.shutdown()
        assert wire.transport.closed


class TestRecording:
    def test_the_reply_to_an_ending_call_is_written_before_the_episode_is(self, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
        """The reply to a terminal call is on the wire before the result line and event file are written, and both
        are written by the time the request is done."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        out = tmp_path / "out"
        seen: list[bool] = []
        wire = Wire(out, on_write=lambda data: seen.append((out / "results.jsonl").exists()))
        sid = wire.open()
        call = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "decline", "arguments": {"reason": "Testing."}}})
        ((status, _, body),) = wire.feed(request(body=call, sid=sid))
        assert status == 200 and "The episode is over" in orjson.loads(body)["result"]["content"][-1]["text"]
        assert seen == [False, False]
        (line,) = [orjson.loads(x) for x in (out / "results.jsonl").read_bytes().splitlines()]
        assert (line["outcome"], line["trial"]) == ("decline", 0)
        assert (out / "events" / f"{SCENARIO}__seed-{SEED}.jsonl").stat().st_size > 0
        wire.sessions.close_all("done")
