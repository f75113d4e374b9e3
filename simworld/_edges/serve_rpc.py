"""The MCP methods simworld's HTTP server answers: one JSON-RPC message in, the bytes of its answer out.

simworld serves a small, fixed surface: ``initialize``, ``ping``, ``tools/list``, ``tools/call``,
``prompts/list`` and ``prompts/get``. Everything that does not depend on the session (the tool list, the
prompts, the initialize result at each protocol version) is serialised once, when the server starts, so a
call costs its episode's step and one ``orjson.dumps`` of the reply. The shapes are the MCP schema's
(camelCase fields: ``inputSchema``, ``structuredContent``, ``isError``), as the official SDK's client reads
them; the stdio transport still runs on the SDK's server (:mod:`simworld._edges.serve`).

Errors follow JSON-RPC 2.0: a message that is not JSON is ``-32700``, one that is not a request is
``-32600``, an unknown method ``-32601``, bad params ``-32602``. Nothing here does I/O or imports the SDK.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from simworld._world.tools import TOOLS, Kind

__all__ = ["PROTOCOL_VERSIONS", "Rpc", "RpcError", "reply_result", "tool_entries"]

#: The protocol revisions this server negotiates with ``initialize``, oldest first; the last is offered to a
#: client that asks for one not in the list (MCP's version negotiation).
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

class Reply(Protocol):
    """The answer to one tool call (:class:`simworld._edges.serve.Reply`)."""

    texts: tuple[str, ...]
    structured: dict[str, Any] | None
    is_error: bool


class Episode(Protocol):
    """What a tool call needs of a session's episode (:class:`simworld._edges.serve.EpisodeSession`)."""

    def call(self, name: str, arguments: dict[str, Any] | None) -> Reply: ...


class Served(Protocol):
    """What the answers need of the served scenario (:class:`simworld._edges.serve.EpisodeSessions`)."""

    instructions: str
    tool_schemas: tuple[dict[str, Any], ...]


class RpcError(Exception):
    """A JSON-RPC error to answer with: its code, message, optional data, and the HTTP status it goes with."""

    def __init__(self, code: int, message: str, status: int = 200, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.data = data

    def body(self, request_id: Any = None) -> bytes:
        """The JSON-RPC error message for ``request_id`` (null when the request's id could not be read)."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


def tool_entries(schemas: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The MCP ``Tool`` objects of simworld's tool schemas: name, description, ``inputSchema`` (the schema's
    ``parameters``), and ``readOnlyHint`` for READ tools."""
    return [{"name": s["name"], "description": s["description"], "inputSchema": s["parameters"],
             "annotations": {"readOnlyHint": TOOLS[s["name"]].kind is Kind.READ}} for s in schemas]


def _result(request_id: Any, result: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b',"result":' + result + b"}"


def reply_result(reply: Reply) -> bytes:
    """The ``CallToolResult`` of a reply: text blocks, structured content and ``isError``."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text} for text in reply.texts],
                              "isError": reply.is_error}
    if reply.structured is not None:
        result["structuredContent"] = reply.structured
    return orjson.dumps(result)


class Rpc:
    """The answers of one served scenario's MCP server, built once from its episodes.

    Args:
        sessions: the episodes (:class:`~simworld._edges.serve.EpisodeSessions`: their instructions and tool
            schemas are the same for every session).
        version: the server's version, as ``serverInfo.version``.
    """

    def __init__(self, sessions: Served, version: str) -> None:
        capabilities = {"prompts": {"listChanged": False}, "tools": {"listChanged": False}}
        server_info = {"name": "simworld", "version": version}
        self._initialize = {v: orjson.dumps({"protocolVersion": v, "capabilities": capabilities,
                                             "serverInfo": server_info, "instructions": sessions.instructions})
                            for v in PROTOCOL_VERSIONS}
        description = "The billing desk's policy and the customer's request."
        self._static = {
            "ping": b"{}",
            "tools/list": orjson.dumps({"tools": tool_entries(sessions.tool_schemas)}),
            "prompts/list": orjson.dumps({"prompts": [{"name": "task", "description": description}]}),
        }
        self._task = orjson.dumps({"description": description, "messages": [
            {"role": "user", "content": {"type": "text", "text": sessions.instructions}}]})

    def initialize(self, request_id: Any, params: Any) -> bytes:
        """The answer to ``initialize``: the client's protocol version if this server speaks it, else the newest
        this server speaks (the client then decides whether it can go on)."""
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            raise RpcError(INVALID_PARAMS, "initialize needs params with a protocolVersion string, capabilities "
                           "and clientInfo", status=400)
        for key in ("capabilities", "clientInfo"):
            if not isinstance(params.get(key), dict):
                raise RpcError(INVALID_PARAMS, f"initialize params need {key} as an object; got "
                               f"{params.get(key)!r}", status=400)
        asked = params["protocolVersion"]
        return _result(request_id, self._initialize[asked if asked in self._initialize else PROTOCOL_VERSIONS[-1]])

    def answer(self, session: Episode, request_id: Any, method: str, params: Any) -> bytes:
        """The answer to request ``method`` within ``session``: a result, or a JSON-RPC error message."""
        try:
            static = self._static.get(method)
            if static is not None:
                return _result(request_id, static)
            if method == "tools/call":
                name, arguments = _call_params(params)
                return _result(request_id, reply_result(session.call(name, arguments)))
            if method == "prompts/get":
                if not isinstance(params, dict) or params.get("name") != "task":
                    asked = params.get("name") if isinstance(params, dict) else None
                    raise RpcError(INVALID_PARAMS, f"Unknown prompt {asked!r}; available: ['task'].")
                return _result(request_id, self._task)
            raise RpcError(METHOD_NOT_FOUND, "Method not found", data=method)
        except RpcError as exc:
            return exc.body(request_id)


def _call_params(params: Any) -> tuple[str, dict[str, Any] | None]:
    """The tool name and arguments of ``tools/call`` params, or :class:`RpcError` naming what is wrong."""
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params {\"name\": TOOL, \"arguments\": {...}} with the "
                       f"tool's name as a string; got {params!r}")
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, f"tools/call arguments must be an object; got {arguments!r}")
    return params["name"], arguments
