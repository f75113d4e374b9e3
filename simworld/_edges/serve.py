"""Serve simworld episodes over MCP (the Model Context Protocol), so any MCP client's model can be the agent.

``serve(scenario, seed)`` serves the scenario's tools over stdio (the default) or streamable HTTP
(``transport="http"``, at ``http://HOST:PORT/mcp``). **Each MCP session is its own episode**: its own
``Environment(scenario, seed, agent_name="mcp")``, the same world at the same seed and independent state, so
one session never sees another's writes nor ends another's episode. Over stdio the one client is one session;
over HTTP every session the client opens (``initialize``) is one. The seed is checked as ``simworld run``
checks it (:meth:`simworld._scenario.scenario.Scenario.run_seed`): a dev seed in the holdout range, a negative
seed, or a holdout instance outside the holdout split is refused, and with ``split="holdout"`` seed N is the
scenario's N-th reserved holdout seed.

HTTP binds 127.0.0.1; another address needs ``allow_remote`` and a bearer token, checked on every request,
and the port is bound before anything is served (:mod:`simworld._edges.serve_http`).

What the client sees (what a simworld agent's :class:`~simworld._episode.episode.Observation` carries, nothing more):

- **instructions** (``InitializeResult.instructions``): one line naming the tools that end the conversation,
  the desk's policy text and the customer's request, rendered for the seed. The same text is the one user
  message of the prompt ``task`` (``prompts/get``), for clients that show prompts but not instructions.
- **tools**: the scenario's tools in simworld's order; ``name``, ``description`` and, as ``inputSchema``,
  the ``parameters`` of ``simworld._world.tools.TOOLS[name].schema()``. READ tools carry ``readOnlyHint``.
- Never the scenario id (ids name the expected outcome), its expectations, solutions or the grade.

Each ``tools/call`` is one ``env.step({"tool": name, "args": arguments})``. An ``ok`` result comes back as
its canonical JSON text (and as ``structuredContent``); an ``error`` or ``denied`` result is a tool error
(``isError: true``) whose text is simworld's message, with ``{"status", "error"}`` as ``structuredContent``.
An unknown tool or a bad argument is recorded and answered exactly as ``simworld run`` would.

When an episode ends (a terminal tool — finish, escalate, request_information, decline — or the
scenario's ``max_steps`` or ``timeout_s``), it is sealed and graded against the solutions' end states (over
HTTP once the reply to the call that ended it is sent, so that no call waits for a grade);
with ``out`` its event log goes to ``out/events/`` and then its result line is appended, whole, to
``out/results.jsonl``, as ``simworld run`` writes them (no wall-clock value; the scenario's post-run hooks
run as they do there). Episodes are numbered as trials of the (scenario, seed) in the order they end —
``SCENARIO__seed-N.jsonl``, then ``SCENARIO__seed-N__trial-1.jsonl``, … with ``"trial"`` in the line — each
number claimed by creating its event file, so episodes never share a name, even across ``serve`` processes
writing to one ``out``. The reply to the ending call says the episode is over; any later call is a tool
error saying so. A one-line summary of the grade goes to stderr, never to the client.

An episode whose client leaves before a terminal call is recorded, never dropped: stdio's client
disconnecting, an HTTP client ending its session (``DELETE``) or sending nothing for ``idle_timeout_s``, or
the server stopping (Ctrl-C, SIGTERM) ends it as ``stop_reason: "agent_stopped"`` with an ``error`` saying
why, graded and written like any other. An episode whose time budget runs out with no terminal call ends as
``timeout`` without waiting for another call.

Two differences from ``simworld run``, both forced by a remote agent:

- The scenario's ``timeout_s`` (real seconds) counts from the session's first tool call, not from when it
  opened: the environment is reset at that call (a session that leaves before any call is reset as it leaves;
  a reset is deterministic, so either is the same world).
- In a recovery scenario the call at which the runner lets the agent die is answered with a tool error
  saying the session was interrupted and the call may or may not have taken effect, with the session log
  so far (the ``history`` a resumed simworld agent is given). The episode goes on over the real world.

``mcp`` is an optional dependency (``pip install 'simworld[mcp]'``), imported only inside :func:`serve`;
without it :func:`serve` raises :class:`MissingDependency`.
"""

from __future__ import annotations

import functools
import gc
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simworld._edges.serve_conn import Connection
from simworld._edges.serve_http import ENDED_BY_SERVER, HttpGate, ServeError, bind, check_access, installed
from simworld._edges.serve_rpc import Rpc, tool_entries
from simworld._edges.serve_sessions import EpisodeSession, EpisodeSessions, Reply, log_line
from simworld._running.runner import simworld_version
from simworld._scenario.scenario import Scenario
from simworld._world.clock import wall_monotonic
from simworld.errors import MissingDependency

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["TRANSPORTS", "EpisodeSession", "EpisodeSessions", "MissingDependency", "Reply", "ServeError", "serve"]

#: The transports :func:`serve` speaks.
TRANSPORTS = ("stdio", "http")
#: The key of the one session of the stdio transport.
STDIO = "stdio"
#: Real seconds an HTTP session may send nothing before it counts as left (the SDK's own default).
IDLE_TIMEOUT_S = 30 * 60.0
#: Why a stdio episode ended when its client went away.
ENDED_BY_DISCONNECT = "the client disconnected before a terminal call"

_MISSING_MCP = "simworld serve requires the optional dependency mcp. Install with: pip install 'simworld[mcp]'"
_NO_SESSION = ("This server plays one episode per MCP session, and this call belongs to none: open a session "
               "(initialize) and call the tools within it.")


def _build_server(sessions: EpisodeSessions) -> Server[Any]:
    """The SDK's low-level MCP server over ``sessions`` for the stdio transport: tools, a ``task`` prompt, and the
    instructions; a tool call goes to the stdio transport's one session. (HTTP is answered without the SDK:
    :mod:`simworld._edges.serve_http`.)
    """
    import mcp.types as types
    from mcp.server import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    # The same tool objects the HTTP transport serves (simworld._edges.serve_rpc), read by the SDK's model.
    tools = [types.Tool.model_validate(entry, by_alias=True) for entry in tool_entries(sessions.tool_schemas)]
    prompt = types.Prompt(name="task", description="The billing desk's policy and the customer's request.")

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None,
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        session = sessions.get(STDIO)
        if session is None:  # the stdio session is open from start to end; never reached
            return types.CallToolResult(content=[types.TextContent(text=_NO_SESSION)], is_error=True,
                                        structured_content={"status": "error", "error": "no session"})
        reply = session.call(params.name, params.arguments)
        session.record()  # one session on this transport: nothing waits behind its grading
        return types.CallToolResult(content=[types.TextContent(text=t) for t in reply.texts],
                                    structured_content=reply.structured, is_error=reply.is_error)

    async def list_prompts(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None,
                           ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams,
                         ) -> types.GetPromptResult:
        if params.name != prompt.name:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt {params.name!r}; available: ['task'].")
        return types.GetPromptResult(description=prompt.description, messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=sessions.instructions))])

    return Server("simworld", version=simworld_version(), instructions=sessions.instructions,
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_prompts=list_prompts,
                  on_get_prompt=get_prompt)


def serve(scenario: Scenario, seed: int, *, split: str = "dev", transport: str = "stdio", out: Path | None = None,
          host: str = "127.0.0.1", port: int = 8000, allow_remote: bool = False, token: str | None = None,
          idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
    """Serve ``scenario`` over MCP, one episode per MCP session, until the client disconnects (stdio) or the
    server is stopped (http); each episode is graded as it ends and, with ``out``, written as ``simworld run``
    would.

    Args:
        scenario: the scenario to serve.
        seed: the dev seed, or with ``split="holdout"`` the index N of the scenario's N-th holdout seed.
        split: ``dev`` or ``holdout``; a dev seed in the holdout range, or a negative seed, is refused.
        transport: ``stdio`` or ``http`` (streamable HTTP at ``http://HOST:PORT/mcp``).
        out: the directory for ``results.jsonl`` and ``events/``; None grades to stderr only.
        host, port: where HTTP listens; ``port`` 0 picks a free port (the line on stderr says which).
        allow_remote: allow a ``host`` that is not loopback (it also needs ``token``).
        token: a bearer token every HTTP request must carry (``Authorization: Bearer TOKEN``).
        idle_timeout_s: real seconds an HTTP session may send nothing before its client counts as gone.

    Raises:
        ServeError: an argument that cannot be served (transport, port, host, token, a busy port).
        ScenarioError: a seed the split refuses, or a holdout instance outside ``split="holdout"``.
        MissingDependency: the ``mcp`` extra is not installed.
    """
    if transport not in TRANSPORTS:
        raise ServeError(f"--transport {transport!r} is unknown; use one of {', '.join(TRANSPORTS)}.")
    if transport == "http" and not 0 <= port <= 65535:
        raise ServeError(f"--port {port} is out of range; use 0 to 65535.")
    run_seed = scenario.run_seed(seed, split)
    if transport == "http":
        check_access(host, allow_remote, token)
    if out is not None and out.exists() and not out.is_dir():
        raise ServeError(f"--out {str(out)!r} is a file; give a directory.")
    try:
        import anyio

        if transport == "http":
            import uvicorn
        else:
            from mcp.server.stdio import stdio_server
    except ImportError as exc:
        raise MissingDependency(_MISSING_MCP, name="mcp") from exc

    sessions = EpisodeSessions(scenario, run_seed, out, idle_timeout_s if transport == "http" else None)

    async def sweep_forever() -> None:
        while True:
            await anyio.sleep(1.0)
            sessions.sweep(wall_monotonic())

    async def run_stdio() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(sweep_forever)
            if sys.platform != "win32" and threading.current_thread() is threading.main_thread():
                tg.start_soon(_stop_on_signal, sessions, tg.cancel_scope)
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()

    if transport == "stdio":
        server = _build_server(sessions)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        sessions.open(STDIO)
        try:
            anyio.run(run_stdio)
        except KeyboardInterrupt:
            sessions.close_all(ENDED_BY_SERVER)
            raise
        finally:  # however it ended (EOF, a signal, Ctrl-C, a crash), the episode is recorded
            sessions.close_all(ENDED_BY_DISCONNECT)
        return

    sock = bind(host, port)  # before anything is printed or written: a busy port is one error line

    async def run_http() -> None:
        app = HttpGate(sessions, Rpc(sessions, simworld_version()), token,
                       loopback=host in ("127.0.0.1", "localhost", "::1"))
        # Everything loaded so far (modules, the scenario, its snapshot) lives as long as the server: kept out of
        # the collector's sight, a full collection walks only what sessions made (~5x shorter pauses, which every
        # call in flight would wait out).
        gc.freeze()
        # A client holding a connection open must not keep a stopping server (and its unrecorded episodes) waiting.
        # No proxy in front to trust, and no Date or Server header a client reads: less to do per response. With
        # httptools each connection is simworld's own protocol, which answers a request without a task of its own
        # (simworld._edges.serve_conn); without it, uvicorn's h11 protocol.
        http: Any = functools.partial(Connection, app) if installed("httptools") else "h11"
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5,
                                lifespan="on", access_log=False, proxy_headers=False, server_header=False,
                                date_header=False, http=http)
        log_line(f"serving one episode per MCP session at http://{_url_host(host)}:{sock.getsockname()[1]}/mcp "
                 "(Ctrl-C to stop)")
        async with anyio.create_task_group() as tg:
            tg.start_soon(sweep_forever)
            await uvicorn.Server(config).serve(sockets=[sock])
            tg.cancel_scope.cancel()

    try:
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        anyio.run(run_http, backend_options={"use_uvloop": installed("uvloop")})
    finally:  # the lifespan's shutdown has recorded the open episodes already, unless the loop died first
        sock.close()
        sessions.close_all(ENDED_BY_SERVER)


async def _stop_on_signal(sessions: EpisodeSessions, scope: Any) -> None:
    """At SIGTERM or SIGHUP, record the open episodes as the server stopping and cancel ``scope``: a stdio
    server told to stop still writes its episode (the default action would kill it first)."""
    import anyio

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async for _ in signals:
            sessions.close_all(ENDED_BY_SERVER)
            scope.cancel()
            return


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
