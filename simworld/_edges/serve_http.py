"""The HTTP edge of ``simworld serve --transport http``: who may connect, the port, and one episode per MCP session.

- **Who may connect.** :func:`check_access` lets a loopback ``--host`` through as it is; any other address
  needs ``--allow-remote`` *and* a bearer token, which :class:`HttpGate` then checks on every HTTP request
  (401 without it). A token given on loopback is checked too. The token is held in memory only: no message,
  log line or file ever carries it.
- **The port.** :func:`bind` binds the socket before anything is served, so a busy port is one clear error
  instead of a server that says it is serving and then dies.
- **Sessions.** :class:`HttpGate` sits in front of the MCP SDK's streamable HTTP app and keeps the registry
  of episodes (:class:`~simworld._edges.serve.EpisodeSessions`) in step with the SDK's MCP sessions: a session
  the SDK opens (a successful ``initialize`` answered with an ``mcp-session-id``) opens an episode; a session
  the client ends (``DELETE``) ends its episode as left before a terminal call; so does the server stopping
  (the ASGI lifespan's shutdown) for every session still open. Its timestamps feed the idle sweep.

Nothing here imports the MCP SDK, Starlette or uvicorn: the gate is a plain ASGI callable.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from simworld._world.clock import wall_monotonic
from simworld.errors import SimworldError

__all__ = ["HttpGate", "ServeError", "bind", "check_access", "is_loopback"]

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


#: The header that names an MCP session on streamable HTTP (lower-case, as ASGI gives headers).
SESSION_HEADER = b"mcp-session-id"
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
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
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


def _header(headers: Any, name: bytes) -> bytes | None:
    for key, value in headers or ():
        if key.lower() == name:
            return bytes(value)
    return None


class HttpGate:
    """The ASGI app in front of the MCP SDK's streamable HTTP app: checks the bearer token and keeps one episode
    per MCP session (see the module docstring).

    Args:
        app: the SDK's streamable HTTP app.
        sessions: the episodes, keyed by MCP session id.
        token: the bearer token every request must carry, or None to let every request through.
    """

    def __init__(self, app: App, sessions: Sessions, token: str | None = None) -> None:
        self.app = app
        self.sessions = sessions
        self._token = None if token is None else token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._watch_shutdown(receive), send)
            return
        if self._token is not None and not self._authorized(scope):
            await self._refuse(scope, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = _header(scope.get("headers"), SESSION_HEADER)
        sid = None if raw is None else raw.decode("latin-1")
        session = self.sessions.get(sid)
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                opened = _header(message.get("headers"), SESSION_HEADER)
                if sid is None and status < 400 and opened is not None:  # the SDK opened a session: a new episode
                    self.sessions.open(opened.decode("latin-1"))
            await send(message)

        if session is not None:
            session.in_flight += 1  # a long-lived GET stream counts as activity for as long as it is open
        try:
            await self.app(scope, receive, watch)
        finally:
            if session is not None:
                session.in_flight -= 1
                session.last_active = wall_monotonic()
        if sid is not None and scope.get("method") == "DELETE" and 200 <= status < 300:
            self.sessions.close(sid, ENDED_BY_CLIENT)

    def _authorized(self, scope: Scope) -> bool:
        value = _header(scope.get("headers"), b"authorization")
        if value is None or self._token is None:
            return False
        scheme, _, credentials = value.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)

    @staticmethod
    async def _refuse(scope: Scope, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(_UNAUTHORIZED)).encode()),
            (b"www-authenticate", b'Bearer realm="simworld"')]})
        await send({"type": "http.response.body", "body": _UNAUTHORIZED})

    def _watch_shutdown(self, receive: Receive) -> Receive:
        """``receive`` for the lifespan scope: at shutdown (Ctrl-C, SIGTERM) every open episode is recorded first."""

        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                self.sessions.close_all(ENDED_BY_SERVER)
            return message

        return wrapped
