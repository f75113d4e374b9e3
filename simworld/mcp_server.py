"""Serve one simworld episode over MCP (the Model Context Protocol), so any MCP client's model can be the agent.

``serve(scenario, seed)`` builds ``Environment(scenario, seed, agent_name="mcp")``, resets it, and serves the
episode over stdio (the default) or streamable HTTP (``transport="http"``, at ``http://HOST:PORT/mcp``,
bound to 127.0.0.1 unless ``host`` says otherwise). One server process is one episode.

What the client sees (what a simworld agent's :class:`~simworld.episode.Observation` carries, nothing more):

- **instructions** (``InitializeResult.instructions``): one line naming the tools that end the conversation,
  the desk's policy text and the customer's request, rendered for the seed. The same text is the one user
  message of the prompt ``task`` (``prompts/get``), for clients that show prompts but not instructions.
- **tools**: the scenario's tools in simworld's order; ``name``, ``description`` and, as ``inputSchema``,
  the ``parameters`` of ``simworld.tools.TOOLS[name].schema()``. READ tools carry ``readOnlyHint``.
- Never the scenario id (ids name the expected outcome), its expectations, solutions or the grade.

Each ``tools/call`` is one ``env.step({"tool": name, "args": arguments})``. An ``ok`` result comes back as
its canonical JSON text (and as ``structuredContent``); an ``error`` or ``denied`` result is a tool error
(``isError: true``) whose text is simworld's message, with ``{"status", "error"}`` as ``structuredContent``.
An unknown tool or a bad argument is recorded and answered exactly as ``simworld run`` would.

When the episode ends (a terminal tool — finish, escalate, request_information, decline — or the
scenario's ``max_steps`` or ``timeout_s``), it is sealed and graded against the solutions' end states;
with ``out`` the result line goes to ``out/results.jsonl`` (one canonical line) and the event log to
``out/events/SCENARIO__seed-N.jsonl``, the same files ``simworld run`` writes (no wall-clock value; the
scenario's post-run hooks run as they do there). The reply to the ending call says the episode is over;
any later call is a tool error saying so. A one-line summary of the grade goes to stderr, never to the
client. A client that disconnects before the episode ends leaves nothing written.

Two differences from ``simworld run``, both forced by a remote agent:

- The scenario's ``timeout_s`` (real seconds) counts from the first tool call, not from server start: the
  environment is reset again at that call, which rebuilds the same world (a reset is deterministic).
- In a recovery scenario the call at which the runner lets the agent die is answered with a tool error
  saying the session was interrupted and the call may or may not have taken effect, with the session log
  so far (the ``history`` a resumed simworld agent is given). The episode goes on over the real world.

``mcp`` is an optional dependency (``pip install 'simworld[mcp]'``), imported only inside :func:`serve`;
without it :func:`serve` raises :class:`MissingDependency`.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from simworld.episode import Environment
from simworld.errors import SimworldError
from simworld.runner import event_file_name, graded_line, run_post_hooks, simworld_version, write_event_file
from simworld.scenario import Scenario
from simworld.state import canonical_bytes
from simworld.tools import TOOLS, Kind

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["TRANSPORTS", "EpisodeSession", "MissingDependency", "Reply", "ServeError", "serve"]

#: The transports :func:`serve` speaks.
TRANSPORTS = ("stdio", "http")

_MISSING_MCP = "simworld serve requires the optional dependency mcp. Install with: pip install 'simworld[mcp]'"


class MissingDependency(SimworldError, ImportError):
    """An optional dependency a command needs is not installed."""


class ServeError(SimworldError, ValueError):
    """An argument of :func:`serve` that cannot be served."""


@attrs.frozen
class Reply:
    """The answer to one tool call, independent of MCP: text blocks, structured content, and whether it failed."""

    texts: tuple[str, ...]
    structured: dict[str, Any] | None
    is_error: bool


def _json(value: Any) -> str:
    return canonical_bytes(value).decode()


def _log(message: str) -> None:
    """One line on stderr (stdout is the stdio transport's wire)."""
    sys.stderr.write(f"simworld serve: {message}\n")
    sys.stderr.flush()


class EpisodeSession:
    """One episode driven call by call by a remote agent: steps, seals, grades and writes it.

    The MCP layer only translates; everything simworld-specific is here.
    """

    def __init__(self, scenario: Scenario, seed: int, out: Path | None = None) -> None:
        self.scenario = scenario
        self.seed = seed
        self.out = out
        self.env = Environment(scenario, seed, agent_name="mcp")
        self.env.reset()
        self._started = False
        #: The graded result line once the episode has ended (None before, or if grading failed).
        self.result: dict[str, Any] | None = None
        self.seal_error: str | None = None
        #: Why the episode ended, once it has.
        self.stop_reason: str | None = None
        terminal = [n for n in scenario.tools if TOOLS[n].kind is Kind.TERMINAL]
        self.instructions = (
            "You are handling a customer's request at a billing desk with this server's tools. "
            f"The conversation ends when you call one of: {', '.join(terminal)}.\n\n"
            f"{self.env.policy_text}\n\n"
            f"The customer's request:\n\n{self.env.request}"
        )

    @property
    def tool_schemas(self) -> tuple[dict[str, Any], ...]:
        """The scenario's tool schemas (``name``, ``description``, ``parameters``), in simworld's order."""
        return self.env.tool_schemas

    def call(self, name: str, arguments: dict[str, Any] | None) -> Reply:
        """Apply one tool call to the episode and say what the agent gets back."""
        env = self.env
        if env.done:
            return Reply((f"The episode is over ({self._why_over()}); no further calls are accepted.",),
                         {"status": "error", "error": "episode over"}, True)
        if not self._started:
            # The scenario's wall-clock budget counts from the agent's first call, not from server start.
            env.reset()
            self._started = True
        observation, done = env.step({"tool": name, "args": {} if arguments is None else arguments})
        if observation.resumed:
            history = list(observation.history)
            reply = Reply(("The session was interrupted during this call: it may or may not have taken effect. "
                           "Check the records before you retry. The session log so far: " + _json(history),),
                          {"status": "error", "error": "session interrupted", "history": history}, True)
        elif observation.last_status == "ok":
            result = observation.last_result
            reply = Reply((_json(result),), result if isinstance(result, dict) else None, False)
        else:
            message = observation.last_result.get("error", "") if isinstance(observation.last_result, dict) else ""
            message = str(message or observation.last_result)
            reply = Reply((message,), {"status": observation.last_status, "error": message}, True)
        if done:
            self._seal()
            reply = attrs.evolve(reply, texts=(*reply.texts, f"The episode is over ({self._why_over()}); "
                                                             "no further calls are accepted."))
        return reply

    def _why_over(self) -> str:
        return {"terminal": "a terminal tool ended it", "max_steps": "the step budget is spent",
                "timeout": "the time budget is spent"}.get(self.stop_reason or "", str(self.stop_reason))

    def _seal(self) -> None:
        """Seal, grade and (with ``out``) write the ended episode; a failure is logged, never sent to the client."""
        scenario, seed, out = self.scenario, self.seed, self.out
        try:
            episode = self.env.episode()
            self.stop_reason = episode.stop_reason
            line = graded_line(scenario, episode)
            if out is not None:
                (out / "events").mkdir(parents=True, exist_ok=True)
            line["hook_errors"] = run_post_hooks(scenario, episode, line, out)
            if out is not None:
                (out / "results.jsonl").write_bytes(canonical_bytes(line) + b"\n")
                write_event_file(out / "events" / event_file_name(scenario.id, seed), scenario, episode)
        except Exception as exc:  # the client's call succeeded; the harness failing is the operator's to see
            self.seal_error = f"{type(exc).__name__}: {exc}"
            _log(f"could not grade or write the episode: {self.seal_error}\n{traceback.format_exc()}")
            return
        self.result = line
        where = f"; written to {out}/" if out is not None else ""
        _log(f"{scenario.id} seed {seed}: outcome {line['outcome']}, stop {line['stop_reason']}, "
             f"{'PASS' if line['passed'] else 'FAIL'}, score {line['total']:.2f}{where}")


def _build_server(session: EpisodeSession) -> Server[Any]:
    """The low-level MCP server over ``session``: tools, a ``task`` prompt, and the instructions."""
    import mcp.types as types
    from mcp.server import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    tools = []
    for schema in session.tool_schemas:
        read_only = TOOLS[schema["name"]].kind is Kind.READ
        tools.append(types.Tool(name=schema["name"], description=schema["description"],
                                input_schema=schema["parameters"],
                                annotations=types.ToolAnnotations(read_only_hint=read_only)))
    prompt = types.Prompt(name="task", description="The billing desk's policy and the customer's request.")

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None,
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        reply = session.call(params.name, params.arguments)
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
            types.PromptMessage(role="user", content=types.TextContent(text=session.instructions))])

    return Server("simworld", version=simworld_version(), instructions=session.instructions, on_list_tools=list_tools,
                  on_call_tool=call_tool, on_list_prompts=list_prompts, on_get_prompt=get_prompt)


def serve(scenario: Scenario, seed: int, *, transport: str = "stdio", out: Path | None = None,
          host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve one episode of ``scenario`` at ``seed`` over MCP until the client disconnects (stdio) or the
    server is stopped (http); the ended episode is graded and, with ``out``, written as ``simworld run`` would.
    """
    if transport not in TRANSPORTS:
        raise ServeError(f"--transport {transport!r} is unknown; use one of {', '.join(TRANSPORTS)}.")
    if transport == "http" and not 0 <= port <= 65535:
        raise ServeError(f"--port {port} is out of range; use 0 to 65535.")
    try:
        import anyio
        from mcp.server.stdio import stdio_server

        if transport == "http":
            import uvicorn
    except ImportError as exc:
        raise MissingDependency(_MISSING_MCP, name="mcp") from exc

    session = EpisodeSession(scenario, seed, out)
    server = _build_server(session)

    async def run_stdio() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    async def run_http() -> None:
        app = server.streamable_http_app(host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        _log(f"serving one episode at http://{_url_host(host)}:{port}/mcp (Ctrl-C to stop)")
        await uvicorn.Server(config).serve()

    anyio.run(run_stdio if transport == "stdio" else run_http)
    if not session.env.done:
        _log("the client left before the episode ended; nothing was graded or written.")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
