"""The HTTP edge of ``simworld serve --transport http``: who may connect, the port, and one episode per MCP session.

- **Who may connect.** :func:`check_access` lets a loopback ``--host`` through as it is; any other address
  needs ``--allow-remote`` *and* a bearer token, which :class:`HttpGate` then checks on every HTTP request
  (401 without it). A token given on loopback is checked too. The token is held in memory only: no message,
  log line or file ever carries it.
- **The port.** :func:`bind` binds the socket before anything is served, so a busy port is one clear error
  instead of a server that says it is serving and then dies.
- **The wire.** :class:`HttpGate` is the whole ASGI app: MCP's streamable HTTP transport for simworld's small
  tool surface, answering every request ``POST`` with one ``application/json`` body (a choice the transport
  leaves to the server), so a call costs its episode's step, not a stack of streams and models. A successful
  ``initialize`` opens a session (its ``mcp-session-id`` header) and with it an episode
  (:class:`~simworld._edges.serve.EpisodeSessions`); every later message names its session (400 without,
  404 for one that is unknown or has ended); a notification or a client's response is accepted with 202;
  ``DELETE`` ends the session, and its episode as left before a terminal call; so does the server stopping
  (the ASGI lifespan's shutdown) for every session still open. ``GET`` is 405: this server never speaks
  first. A JSON-RPC batch (removed from MCP in 2025-06-18) is refused as an invalid request. On a loopback
  address the ``Host`` and ``Origin`` headers must name loopback too (DNS rebinding). What each method
  answers is :mod:`simworld._edges.serve_rpc`. An episode that a call ends is graded and written once the reply
  to that call has been sent (:meth:`~simworld._edges.serve.EpisodeSession.record`).

Nothing here imports the MCP SDK, Starlette or uvicorn: the app is a plain ASGI callable over two plain functions
of a request, :meth:`HttpGate.screen` and :meth:`HttpGate.post`, which :mod:`simworld._edges.serve_conn` calls
directly for each request it reads.
"""

from __future__ import annotations

import errno
import hmac
import importlib.util
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

import orjson

from simworld._edges.serve_rpc import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, PROTOCOL_VERSIONS, Rpc, RpcError
from simworld._world.clock import wall_monotonic
from simworld.errors import SimworldError

__all__ = ["Answer", "HttpGate", "ServeError", "bind", "check_access", "installed", "is_loopback"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Sessions(Protocol):
    """What the gate asks of the server's episodes (:class:`~simworld._edges.serve.EpisodeSessions`)."""

    def open(self, key: str) -> Any: ...
    def get(self, key: str | None) -> Any: ...
    def close(self, key: str, why: str) -> None: ...
    def close_all(self, why: str) -> None: ...
    def __len__(self) -> int: ...


#: The header that names an MCP session on streamable HTTP (lower-case, as ASGI gives headers).
SESSION_HEADER = b"mcp-session-id"
#: The header that carries the negotiated protocol version on every request after ``initialize``.
VERSION_HEADER = b"mcp-protocol-version"
#: Where the MCP endpoint is served.
PATH = "/mcp"
#: The largest request body accepted (the SDK's default).
MAX_BODY = 4 * 1024 * 1024
#: Sessions open at once beyond which ``initialize`` is refused with 503 (the SDK's default).
MAX_SESSIONS = 10_000
#: The Host (and Origin) names a loopback server answers to, with any port.
LOOPBACK_NAMES = (b"127.0.0.1", b"localhost", b"[::1]")
#: Why an episode whose client sent DELETE, or whose server stopped, ended.
ENDED_BY_CLIENT = "the client ended its MCP session before a terminal call"
ENDED_BY_SERVER = "the server stopped before a terminal call"

_UNAUTHORIZED = (b'{"error":"unauthorized","error_description":"this server needs the header '
                 b'Authorization: Bearer <token> on every request"}')


class ServeError(SimworldError, ValueError):
    """An argument of :func:`simworld._edges.serve.serve` that cannot be served."""


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (127.0.0.0/8, ::1); a name that does not
    resolve is not."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def check_access(host: str, allow_remote: bool, token: str | None) -> None:
    """Refuse to serve beyond this machine without ``--allow-remote`` and a bearer token, and refuse a token no
    client could send. Messages name the argument, never the token's value."""
    if token is not None and (not token or any(c.isspace() or not c.isprintable() for c in token)):
        raise ServeError("--token (or SIMWORLD_TOKEN) is empty or holds whitespace or control characters; give a "
                         "token of visible characters, e.g. python -c 'import secrets; print(secrets.token_hex())'")
    if is_loopback(host):
        return
    if not allow_remote:
        raise ServeError(f"--host {host!r} is not a loopback address: serving beyond this machine needs "
                         "--allow-remote and a bearer token (SIMWORLD_TOKEN or --token); or drop --host to bind "
                         "127.0.0.1.")
    if token is None:
        raise ServeError(f"--allow-remote --host {host!r} needs a bearer token: set SIMWORLD_TOKEN (or --token); "
                         "clients then send 'Authorization: Bearer <token>' with every request.")


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (not yet listening): a busy port is refused here, before anything is
    served or printed."""
    # proto=IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and without it a
    # response written as headers then body waits out the client's delayed ACK (~40 ms) on a kept-alive connection.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    # As uvicorn does: a port left in TIME_WAIT by a server just stopped is free again; one listening is not.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(f"--port {port} is in use on {host}; pick another --port (0 picks a free one), or "
                             "stop the process that holds it.") from None
        raise ServeError(f"cannot bind --host {host} --port {port}: {exc.strerror or exc}; give an address of "
                         "this machine (default 127.0.0.1).") from None
    return sock


_JSON = (b"content-type", b"application/json")
_ALLOW = (b"allow", b"POST, DELETE")


def _error(status: int, code: int, message: str, request_id: Any = None) -> tuple[int, bytes]:
    return status, RpcError(code, message).body(request_id)


#: An answer: its status, body and headers beyond Content-Type and Content-Length, and the session whose ended
#: episode, if any, is to be recorded once the answer is sent.
Answer = tuple[int, bytes, tuple[tuple[bytes, bytes], ...], Any]


def _failed(status: int, code: int, message: str, request_id: Any = None) -> Answer:
    """A JSON-RPC error answered with ``status``, no session to name or record."""
    return *_error(status, code, message, request_id), (), None


def _refusal(status: int, message: str, *extra: tuple[bytes, bytes]) -> Answer:
    """A request refused before any session is touched: an invalid-request JSON-RPC error with no id."""
    return *_error(status, INVALID_REQUEST, message), extra, None


def _accepts_json(accept: bytes | None) -> bool:
    """Whether an Accept header admits ``application/json`` (or a wildcard that covers it)."""
    if accept is None:
        return False
    types = {part.split(b";")[0].strip().lower() for part in accept.split(b",")}
    return bool(types & {b"application/json", b"application/*", b"*/*"})


def _is_json(content_type: bytes) -> bool:
    """Whether a Content-Type header says ``application/json`` (with any parameters)."""
    return content_type.split(b";")[0].strip().lower() == b"application/json"


class _Verdicts:
    """What a check of a header value said, remembered by value: a client sends the same Accept, Content-Type and
    Host on every request, so each is read once, not once a request. At most :data:`KEPT` values are kept, so a
    client sending a new value each time costs a check each time, and no memory."""

    KEPT = 64

    def __init__(self, check: Callable[[bytes], bool]) -> None:
        self._check = check
        self._seen: dict[bytes, bool] = {}

    def __call__(self, value: bytes) -> bool:
        verdict = self._seen.get(value)
        if verdict is None:
            verdict = self._check(value)
            if len(self._seen) < self.KEPT:
                self._seen[value] = verdict
        return verdict


def _loopback_origin(value: bytes, scheme: bool) -> bool:
    """Whether a Host (``name:port``) or Origin (``http://name:port``) header names this loopback server."""
    if scheme:
        for prefix in (b"http://", b"https://"):
            if value.startswith(prefix):
                value = value[len(prefix):]
                break
        else:
            return False
    return any(value == name or value.startswith(name + b":") for name in LOOPBACK_NAMES)


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it: uvicorn serves with httptools (its C HTTP parser,
    several times cheaper per request than h11) and uvloop when they are installed, as the ``mcp`` extra installs
    them."""
    return importlib.util.find_spec(module) is not None


class HttpGate:
    """The ASGI app of ``simworld serve --transport http``: the bearer token, MCP's streamable HTTP transport
    (JSON responses), and one episode per MCP session (see the module docstring).

    Args:
        sessions: the episodes, keyed by MCP session id.
        rpc: what each MCP method answers.
        token: the bearer token every request must carry, or None to let every request through.
        loopback: whether the server listens on loopback only, so that a ``Host`` or ``Origin`` naming another
            host is a DNS-rebinding attempt (421, 403).
    """

    def __init__(self, sessions: Sessions, rpc: Rpc, token: str | None = None, *, loopback: bool = True) -> None:
        self.sessions = sessions
        self.rpc = rpc
        self._token = None if token is None else token.encode()
        self._loopback = loopback
        self._accepts_json = _Verdicts(_accepts_json)
        self._is_json = _Verdicts(_is_json)
        self._loopback_host = _Verdicts(lambda value: _loopback_origin(value, scheme=False))
        self._loopback_page = _Verdicts(lambda value: _loopback_origin(value, scheme=True))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":  # a websocket: nothing is served over one
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = dict(scope.get("headers") or ())
        answer = self.screen(scope["method"], scope["path"], headers)
        if answer is None:
            answer = self.post(headers, await _read_body(receive))
        status, body, extra, session = answer
        await _send(send, status, body, *extra)
        # An episode this message ended is graded and written only now, its reply sent: the agent never sees the
        # grade, so its call need not wait for it. Still in the same turn of the event loop as the reply (unless the
        # write had to wait for a slow reader), so episodes are recorded in the order they end.
        if session is not None:
            session.record()

    def screen(self, method: str, path: str, headers: dict[bytes, bytes]) -> Answer | None:
        """The answer to a request that its method, path and headers settle (a refusal, or anything but a POST), or
        None for a POST whose body is to be read and answered by :meth:`post`. ``headers`` names in lower case."""
        if self._token is not None and not self._authorized(headers.get(b"authorization")):
            return 401, _UNAUTHORIZED, ((b"www-authenticate", b'Bearer realm="simworld"'),), None
        if path != PATH:
            return _refusal(404, f"Not Found: the MCP endpoint is {PATH}")
        if self._loopback:
            host, origin = headers.get(b"host"), headers.get(b"origin")
            if host is None or not self._loopback_host(host):
                return _refusal(421, "Invalid Host header: this server answers to 127.0.0.1, localhost or [::1] only")
            if origin is not None and not self._loopback_page(origin):
                return _refusal(403, "Invalid Origin header: this server answers pages from 127.0.0.1, localhost or "
                                "[::1] only")
        if method == "POST":
            accept = headers.get(b"accept")
            if accept is None or not self._accepts_json(accept):
                return _refusal(406, "Not Acceptable: the Accept header must include application/json")
            if not self._is_json(headers.get(b"content-type", b"")):
                return _refusal(415, "Unsupported Media Type: send the JSON-RPC message with Content-Type: "
                                "application/json")
            declared = headers.get(b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
                return self.post(headers, None)
            return None
        if method == "DELETE":
            status, body = self._delete(headers)
            return status, body, (), None
        if method == "GET":  # this server opens no stream of its own, as the transport allows
            # No body: a client that gives up on the stream without reading one can keep the connection.
            return 405, b"", (_ALLOW,), None
        return _refusal(405, f"Method Not Allowed: {method}; use POST (and DELETE to end a session)", _ALLOW)

    def post(self, headers: dict[bytes, bytes], body: bytes | None) -> Answer:
        """The answer to a POSTed JSON-RPC message that :meth:`screen` let through (``body`` None: larger than
        :data:`MAX_BODY`), with the session to record once it is sent."""
        if body is None:
            return _refusal(413, f"Request body too large: the limit is {MAX_BODY} bytes")
        return self._answer(headers, body)

    def _answer(self, headers: dict[bytes, bytes], body: bytes) -> Answer:
        """The answer to one POSTed JSON-RPC message: a session it opened is named in its header, and a session
        it was answered within is the one to record."""
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return _failed(400, PARSE_ERROR, f"Parse error: {exc}")
        if isinstance(message, list):
            return _failed(400, INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not supported (MCP removed "
                          "them in 2025-06-18); send one message per POST")
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _failed(400, INVALID_REQUEST, 'Invalid Request: expected one JSON-RPC 2.0 message, an object '
                          'with "jsonrpc": "2.0"')
        method = message.get("method")
        request_id = message.get("id")
        is_request = "id" in message and method is not None
        if method is not None and not isinstance(method, str) or (
                is_request and (isinstance(request_id, bool) or not isinstance(request_id, str | int))):
            return _failed(400, INVALID_REQUEST, "Invalid Request: method must be a string and id a string or an "
                          "integer")
        if method is None and "result" not in message and "error" not in message:
            return _failed(400, INVALID_REQUEST, "Invalid Request: a message needs a method (a request or a "
                          "notification) or a result or error (a response)")
        raw = headers.get(SESSION_HEADER)
        if method == "initialize" and is_request:
            if raw is not None:
                return _failed(400, INVALID_REQUEST, "Bad Request: initialize opens a new session; send it "
                              "without an mcp-session-id header", request_id)
            try:
                answer = self.rpc.initialize(request_id, message.get("params"))
            except RpcError as exc:
                return exc.status, exc.body(request_id), (), None
            if len(self.sessions) >= MAX_SESSIONS:
                return _failed(503, INTERNAL_ERROR, f"Too many open sessions ({MAX_SESSIONS}); end one (DELETE) "
                              "and retry", request_id)
            sid = secrets.token_hex(16)
            self.sessions.open(sid)
            return 200, answer, ((SESSION_HEADER, sid.encode()),), None
        if raw is None:
            return _failed(400, INVALID_REQUEST, "Bad Request: Missing session ID: send the mcp-session-id header "
                          "that initialize answered with", request_id)
        session = self.sessions.get(raw.decode("latin-1"))
        if session is None:
            return _failed(404, INVALID_REQUEST, "Session not found: it has ended or never existed; initialize a "
                          "new one", request_id)
        session.last_active = wall_monotonic()
        version = headers.get(VERSION_HEADER)
        if version is not None and version.decode("latin-1") not in PROTOCOL_VERSIONS:
            return _failed(400, INVALID_REQUEST, f"Bad Request: unsupported MCP-Protocol-Version "
                          f"{version.decode('latin-1')!r}; this server speaks {', '.join(PROTOCOL_VERSIONS)}",
                          request_id)
        if not is_request or method is None:  # a notification, or a response to a request it never sends
            return 202, b"", (), session
        return 200, self.rpc.answer(session, request_id, method, message.get("params")), (), session

    def _delete(self, headers: dict[bytes, bytes]) -> tuple[int, bytes]:
        raw = headers.get(SESSION_HEADER)
        if raw is None:
            return _error(400, INVALID_REQUEST, "Bad Request: Missing session ID: DELETE ends the session named by "
                          "its mcp-session-id header")
        sid = raw.decode("latin-1")
        if self.sessions.get(sid) is None:
            return _error(404, INVALID_REQUEST, "Session not found: it has ended or never existed")
        self.sessions.close(sid, ENDED_BY_CLIENT)
        return 200, b""

    def _authorized(self, value: bytes | None) -> bool:
        if value is None or self._token is None:
            return False
        scheme, _, credentials = value.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan: at shutdown (Ctrl-C, SIGTERM) every open episode is recorded first."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.sessions.close_all(ENDED_BY_SERVER)
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body, or None when it is larger than :data:`MAX_BODY` (a declared length over it is refused
    before, by :meth:`HttpGate.screen`)."""
    message = await receive()
    body = message.get("body", b"")
    if message.get("more_body"):
        chunks = [body]
        size = len(body)
        while message.get("more_body") and size <= MAX_BODY:
            message = await receive()
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
        body = b"".join(chunks)
    return None if len(body) > MAX_BODY else body


async def _send(send: Send, status: int, body: bytes, *extra: tuple[bytes, bytes]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [_JSON, (b"content-length", str(len(body)).encode()), *extra]})
    await send({"type": "http.response.body", "body": body})
