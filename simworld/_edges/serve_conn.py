"""One HTTP/1.1 connection of ``simworld serve --transport http``: bytes in, the gate's answers out.

uvicorn runs the server (the socket, signals, graceful shutdown, the ASGI lifespan); :class:`Connection` is the
protocol it runs for each connection in place of its own, when httptools (the C parser uvicorn uses) is installed.
Every request is still answered by the ASGI app (:class:`~simworld._edges.serve_http.HttpGate`), which alone
decides what goes on the wire; what changes is how a request reaches it.

A generic ASGI server starts a task per request when its headers arrive, and the app waits on an event for the
body. The gate instead is called once the whole request is in, in the same turn of the event loop, with a body
that is already there and a ``send`` that writes to the socket at once; it never has to wait, so its coroutine
runs to the end when first stepped, with no task, no event and no scheduling (:meth:`Connection._step` still
finishes one that does wait, as a task would). The status line, headers and body go out in one ``write``.

HTTP as uvicorn's httptools protocol speaks it: keep-alive, pipelined requests answered in order, ``Expect:
100-continue``, chunked request bodies, ``Connection: close`` and HTTP/1.0, an unparsable request answered 400
and closed, a connection idle past uvicorn's ``timeout_keep_alive`` closed, and an exception in the app answered
500 and logged. A body larger than :data:`~simworld._edges.serve_http.MAX_BODY` is not kept: the gate answers 413
and the connection is closed. An upgrade (a websocket) is answered as plain HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import urllib.parse
from typing import Any, cast

from simworld._edges.serve_http import MAX_BODY, App, Message

__all__ = ["Connection"]

_LOG = logging.getLogger("uvicorn.error")
_STATUS = {s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in http.HTTPStatus}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_BAD_REQUEST = b"Invalid HTTP request received."
_SERVER_ERROR = b"Internal Server Error"


def _status_line(status: int) -> bytes:
    return _STATUS.get(status) or b"HTTP/1.1 %d \r\n" % status


class Connection(asyncio.Protocol):
    """One client connection, its requests answered by ``app`` (see the module docstring).

    Made by uvicorn's server with its config and state (as ``uvicorn.Config(http=...)`` makes a protocol), ``app``
    bound first (``functools.partial``).
    """

    def __init__(self, app: App, *, config: Any, server_state: Any, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        import httptools

        self._app = app
        self._errors = (httptools.HttpParserError, httptools.HttpParserUpgrade)
        self._parser = httptools.HttpRequestParser(self)
        # As uvicorn sets it: a pipelined request is answered even if the client closes after it (httptools >= 0.6.3).
        with contextlib.suppress(AttributeError):
            self._parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self._parse_url = httptools.parse_url
        self._loop = _loop or asyncio.get_running_loop()
        self._keep_alive_s: float = config.timeout_keep_alive
        self._state = server_state
        self._transport: asyncio.Transport | None = None
        self._idle: asyncio.TimerHandle | None = None
        self._writing = True
        # The request being read.
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._size = 0
        self._declared: bytes | None = None  # its Content-Length
        self._expect = False  # whether it waits for 100 Continue before its body
        self._answered = False  # answered before its body was in (too large): the rest of it is not read
        # The response being written.
        self._started = False
        self._head: list[bytes] | None = None
        self._length: int | None = None
        self._method = ""
        self._keep = True

    # --- asyncio.Protocol ---------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        self._state.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._state.connections.discard(self)
        self._cancel_idle()
        if self._transport is not None and exc is None:
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        self._cancel_idle()
        try:
            self._parser.feed_data(data)
        except self._errors[0]:
            self._reject()
        except self._errors[1]:  # the upgrade's request was answered as plain HTTP; what follows is not HTTP
            self._close()

    def eof_received(self) -> None:
        return None  # the transport closes itself

    def pause_writing(self) -> None:
        """The client is not reading its answers: read no more requests until it does."""
        self._writing = False
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._writing = True
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def shutdown(self) -> None:
        """Called by uvicorn's server when it stops: no request is ever half answered here, so close now."""
        self._close()

    # --- httptools parser callbacks -----------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._body = []
        self._size = 0
        self._answered = False
        self._declared = None
        self._expect = False

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-length":
            self._declared = value
        elif name == b"expect":
            self._expect = value.lower() == b"100-continue"
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        declared = self._declared
        if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY:
            self._answer()  # the gate refuses it on the declared length alone (413), and the body is never read
            self._answered = True
            self._close()
        elif self._expect:
            self._write(_CONTINUE)

    def on_body(self, body: bytes) -> None:
        if self._answered:
            return
        self._size += len(body)
        self._body.append(body)
        if self._size > MAX_BODY:  # more than the gate accepts: it answers 413 with what is in, and no more is read
            self._answer()
            self._answered = True
            self._close()

    def on_message_complete(self) -> None:
        if not self._answered:
            self._answer()

    # --- one request --------------------------------------------------------------------------------------------

    def _answer(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        parser = self._parser
        version = parser.get_http_version()
        self._method = parser.get_method().decode("ascii")
        self._keep = version != "1.0" and parser.should_keep_alive()
        self._started, self._head, self._length = False, None, None
        url = self._parse_url(self._url)
        raw_path = url.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": version,
                 "method": self._method, "scheme": "http", "path": path, "raw_path": raw_path,
                 "query_string": url.query or b"", "root_path": "", "headers": self._headers}
        self._step(self._app(scope, self._receive, self._send))

    def _step(self, coro: Any) -> None:
        """Run the app's coroutine until it ends or waits; one that waits goes on when what it awaits is done."""
        try:
            awaited = coro.send(None)
        except StopIteration:
            if not self._started:
                _LOG.error("ASGI callable returned without starting response.")
                self._fail()
            elif self._head is not None:  # a response half sent cannot be finished
                _LOG.error("ASGI callable returned without completing response.")
                self._close()
            return
        except Exception as exc:
            _LOG.error("Exception in ASGI application\n", exc_info=exc)
            if not self._started:
                self._fail()
            self._close()
            return
        if awaited is None:  # a bare yield (asyncio.sleep(0)): go on at the next turn
            self._loop.call_soon(self._step, coro)
        else:
            awaited._asyncio_future_blocking = False
            awaited.add_done_callback(lambda _: self._step(coro))

    async def _receive(self) -> Message:
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        self._body = []
        return {"type": "http.request", "body": body, "more_body": False}

    async def _send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._started = True
            head = [_status_line(message["status"])]
            headers = message.get("headers", ())
            if self._state.default_headers:
                headers = [*self._state.default_headers, *headers]
            said_connection = False
            for name, value in headers:  # names in lower case, as ASGI has them
                if name == b"content-length":
                    self._length = int(value)
                elif name == b"connection":
                    said_connection = True
                    if b"close" in value.lower():
                        self._keep = False
                head += (name, b": ", value, b"\r\n")
            if not self._keep and not said_connection:
                head.append(b"connection: close\r\n")
            self._head = head
        elif kind == "http.response.body" and self._head is not None:
            body = b"" if self._method == "HEAD" else message.get("body", b"")
            if message.get("more_body") or (self._length is not None and self._method != "HEAD"
                                            and len(body) != self._length):
                raise RuntimeError("simworld's gate answers each request with one body of its content-length")
            if self._length is None and self._method != "HEAD":
                self._head.append(b"content-length: %d\r\n" % len(body))
            self._head += (b"\r\n", body)
            self._write(b"".join(self._head))
            self._head = None
            self._state.total_requests += 1
            if not self._keep:
                self._close()
            elif self._keep_alive_s:
                self._cancel_idle()  # several pipelined requests answered in one read: the last one's counts
                self._idle = self._loop.call_later(self._keep_alive_s, self._close)
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    # --- the connection -----------------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def _fail(self) -> None:
        self._write(_status_line(500) + b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
                    b"connection: close\r\n\r\n" % len(_SERVER_ERROR) + _SERVER_ERROR)
        self._close()

    def _reject(self) -> None:
        self._write(_status_line(400) + b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
                    b"connection: close\r\n\r\n" % len(_BAD_REQUEST) + _BAD_REQUEST)
        self._close()

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _close(self) -> None:
        self._cancel_idle()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
