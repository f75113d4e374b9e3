"""One HTTP/1.1 connection of ``simworld serve --transport http``: bytes in, the gate's answers out.

uvicorn runs the server (the socket, signals, graceful shutdown, the ASGI lifespan); :class:`Connection` is the
protocol it runs for each connection in place of its own, when httptools (the C parser uvicorn uses) is installed.
What each request gets is decided by :class:`~simworld._edges.serve_http.HttpGate`, the same code that answers it
as an ASGI app (without httptools, under uvicorn's h11 protocol, and in the tests); what changes is how a request
reaches it.

A generic ASGI server starts a task per request when its headers arrive, builds a scope, and the app awaits its
body and sends its answer as messages. Here a request's headers go into the dict the gate reads as they arrive;
:meth:`~simworld._edges.serve_http.HttpGate.screen` answers at once what its method, path and headers settle (a
refusal, a ``DELETE``, a ``GET``), and a ``POST`` is answered by
:meth:`~simworld._edges.serve_http.HttpGate.post` once its body is in, in the same turn of the event loop, with no
task, coroutine or message; the status line, headers and body go out in one ``write``, and only then is an
episode the request ended recorded.

HTTP as uvicorn's httptools protocol speaks it: keep-alive, pipelined requests answered in order, ``Expect:
100-continue``, chunked request bodies, ``Connection: close`` and HTTP/1.0, ``HEAD`` answered without a body, an
unparsable request answered 400 and closed, a connection idle past uvicorn's ``timeout_keep_alive`` closed, and an
exception while answering answered 500 and logged. A body larger than :data:`~simworld._edges.serve_http.MAX_BODY`
is not kept: the gate answers 413 and the connection is closed. An upgrade (a websocket) is answered as plain
HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import urllib.parse
from typing import Any, cast

from simworld._edges.serve_http import MAX_BODY, Answer, HttpGate

__all__ = ["Connection"]

_LOG = logging.getLogger("uvicorn.error")
_STATUS = {s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in http.HTTPStatus}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_JSON = b"content-type: application/json\r\ncontent-length: "
_BAD_REQUEST = b"Invalid HTTP request received."
_SERVER_ERROR = b"Internal Server Error"


def _status_line(status: int) -> bytes:
    return _STATUS.get(status) or b"HTTP/1.1 %d \r\n" % status


def _plain(status: int, text: bytes) -> bytes:
    """A plain-text answer that closes the connection (uvicorn's 400 and 500)."""
    return (_status_line(status) + b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n" % len(text) + text)


class Connection(asyncio.Protocol):
    """One client connection, its requests answered by ``gate`` (see the module docstring).

    Made by uvicorn's server with its config and state (as ``uvicorn.Config(http=...)`` makes a protocol), ``gate``
    bound first (``functools.partial``).
    """

    def __init__(self, gate: HttpGate, *, config: Any, server_state: Any, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        import httptools

        self._gate = gate
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
        # The request being read.
        self._url = b""
        self._headers: dict[bytes, bytes] = {}
        self._body: list[bytes] = []
        self._size = 0
        self._method = ""
        self._keep = True
        self._answered = False  # answered before its body was in: the rest of it is not kept

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
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def shutdown(self) -> None:
        """Called by uvicorn's server when it stops: no request is ever half answered here, so close now."""
        self._close()

    # --- httptools parser callbacks -----------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._size = 0
        self._answered = False

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.lower()] = value  # the last of a repeated header, as the gate's dict() of a list keeps

    def on_headers_complete(self) -> None:
        parser = self._parser
        self._method = parser.get_method().decode("ascii")
        self._keep = parser.get_http_version() != "1.0" and parser.should_keep_alive()
        path = self._parse_url(self._url).path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        try:
            answer = self._gate.screen(self._method, path, self._headers)
        except Exception as exc:
            self._fail(exc)
            return
        if answer is not None:  # settled without the body, which is not kept
            self._answered = True
            self._send(answer)
            if answer[0] == 413:
                self._close()  # the body is not wanted: no need to read it
        elif self._headers.get(b"expect", b"").lower() == b"100-continue":
            self._write(_CONTINUE)

    def on_body(self, body: bytes) -> None:
        if self._answered:
            return
        self._size += len(body)
        self._body.append(body)
        if self._size > MAX_BODY:  # more than the gate accepts: it answers 413, and no more is read
            self._answered = True
            self._post(None)
            self._close()

    def on_message_complete(self) -> None:
        if not self._answered:
            self._post(self._body[0] if len(self._body) == 1 else b"".join(self._body))

    # --- one request --------------------------------------------------------------------------------------------

    def _post(self, body: bytes | None) -> None:
        try:
            answer = self._gate.post(self._headers, body)
        except Exception as exc:
            self._fail(exc)
            return
        self._send(answer)

    def _send(self, answer: Answer) -> None:
        """Write ``answer`` as the gate's ASGI answer goes out (Content-Type, Content-Length, its own headers), then
        record the episode it ended, if any."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        status, body, extra, session = answer
        head = [_status_line(status), _JSON, b"%d\r\n" % len(body)]
        for name, value in extra:
            head += (name, b": ", value, b"\r\n")
        if not self._keep:
            head.append(b"connection: close\r\n")
        head += (b"\r\n", b"" if self._method == "HEAD" else body)
        transport.write(b"".join(head))
        self._state.total_requests += 1
        if not self._keep:
            self._close()
        elif self._keep_alive_s:
            self._cancel_idle()  # several pipelined requests answered in one read: the last one's counts
            self._idle = self._loop.call_later(self._keep_alive_s, self._close)
        if session is not None:
            try:
                session.record()
            except Exception as exc:  # record logs its own failures; anything else is a bug, kept off the wire
                _LOG.error("Exception recording an episode\n", exc_info=exc)

    # --- the connection -----------------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def _fail(self, exc: Exception) -> None:
        _LOG.error("Exception answering a request\n", exc_info=exc)
        self._answered = True
        self._write(_plain(500, _SERVER_ERROR))
        self._close()

    def _reject(self) -> None:
        self._write(_plain(400, _BAD_REQUEST))
        self._close()

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _close(self) -> None:
        self._cancel_idle()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()
