"""`simworld serve --transport http` on the wire: MCP's streamable HTTP transport as simworld answers it.

Most tests drive the ASGI app in-process (no socket, no SDK) with raw requests, so each edge of the protocol is
pinned by its status and JSON-RPC error; the last class runs a real server with several official SDK clients at
once.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp_helpers import TIMEOUT, http_server, wait_for_results

from simworld._edges import serve_http
from simworld._edges.serve import EpisodeSessions
from simworld._edges.serve_http import ENDED_BY_CLIENT, ENDED_BY_SERVER, HttpGate
from simworld._edges.serve_rpc import PROTOCOL_VERSIONS, Rpc
from simworld._scenario.scenario import load_suite
from simworld._world.clock import wall_monotonic
from simworld._world.templates import resolve_args
from simworld._world.tools import TOOLS, Kind

SCENARIO = "split-balance-three-ways"
SEED = 3
(SPLIT,) = load_suite(None, [SCENARIO])
VARIABLES = dict(SPLIT.instance(SEED).vars)
INIT: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                "host": "127.0.0.1:8000"}


class Wire:
    """An in-process server: the ASGI app over fresh episodes, called with one raw HTTP request at a time."""

    def __init__(self, out: Path | None = None, token: str | None = None) -> None:
        self.sessions = EpisodeSessions(SPLIT, SEED, out, idle_timeout_s=60.0)
        self.app = HttpGate(self.sessions, Rpc(self.sessions, "0"), token)

    def request(self, method: str = "POST", body: Any = None, headers: dict[str, str] | None = None,
                path: str = "/mcp", on_send: Callable[[MutableMapping[str, Any]], None] | None = None,
                ) -> tuple[int, dict[bytes, bytes], bytes]:
        """Status, response headers and body of one request (``body`` is JSON-encoded unless it is bytes);
        ``on_send`` sees each ASGI message as the app sends it."""
        raw = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
        merged = JSON_HEADERS | (headers or {})
        scope: dict[str, Any] = {"type": "http", "method": method, "path": path,
                 "headers": [(k.lower().encode(), v.encode()) for k, v in merged.items()]}
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> MutableMapping[str, Any]:
            return {"type": "http.request", "body": raw or b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)
            if on_send is not None:
                on_send(message)

        anyio.run(self.app, scope, receive, send)
        start, body_message = sent
        return start["status"], dict(start["headers"]), body_message["body"]

    def open(self, version: str = "2025-11-25") -> str:
        """Initialize a session; its id."""
        status, headers, _ = self.request(body=INIT | {"params": INIT["params"] | {"protocolVersion": version}})
        assert status == 200
        return headers[b"mcp-session-id"].decode()

    def rpc(self, sid: str, method: str, params: Any = None, request_id: Any = 2) -> dict[str, Any]:
        """The JSON-RPC answer to one request within session ``sid`` (which must be answered with 200)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        status, _, body = self.request(body=message, headers={"mcp-session-id": sid})
        assert status == 200, body
        answer: dict[str, Any] = orjson.loads(body)
        assert answer["id"] == request_id
        return answer


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[Wire]:
    monkeypatch.setattr("sys.stderr", io.StringIO())  # the one-line grade summaries
    yield Wire()


def _error(body: bytes) -> tuple[int, str]:
    error = orjson.loads(body)["error"]
    return error["code"], error["message"]


class TestInitialize:
    def test_initialize_opens_a_session_with_instructions_and_capabilities(self, wire: Wire) -> None:
        """initialize answers 200 in JSON with a fresh mcp-session-id, the tools and prompts capabilities and the
        instructions; two initializes open two sessions."""
        status, headers, body = wire.request(body=INIT)
        result = orjson.loads(body)["result"]
        assert status == 200 and headers[b"content-type"] == b"application/json"
        assert result["protocolVersion"] == "2025-11-25" and result["serverInfo"]["name"] == "simworld"
        assert set(result["capabilities"]) == {"tools", "prompts"}
        assert result["instructions"] == wire.sessions.instructions
        assert len(headers[b"mcp-session-id"]) == 32 and wire.open() != headers[b"mcp-session-id"].decode()
        assert len(wire.sessions) == 2

    def test_protocol_version_is_negotiated(self, wire: Wire) -> None:
        """A version this server speaks is echoed; any other is answered with the newest it speaks."""
        for asked, answered in [("2024-11-05", "2024-11-05"), ("2025-06-18", "2025-06-18"),
                                ("2026-07-28", PROTOCOL_VERSIONS[-1]), ("1999-01-01", PROTOCOL_VERSIONS[-1])]:
            _, _, body = wire.request(body=INIT | {"params": INIT["params"] | {"protocolVersion": asked}})
            assert orjson.loads(body)["result"]["protocolVersion"] == answered

    def test_initialize_without_params_is_invalid_params_and_opens_nothing(self, wire: Wire) -> None:
        """initialize with no protocolVersion, or without clientInfo, is -32602 and no session is opened."""
        bad: list[Any] = [None, {"capabilities": {}, "clientInfo": {}}, {"protocolVersion": "2025-11-25"}]
        for params in bad:
            status, headers, body = wire.request(body={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                       "params": params})
            assert (status, _error(body)[0]) == (400, -32602) and b"mcp-session-id" not in headers
        assert len(wire.sessions) == 0

    def test_an_unsupported_protocol_version_header_is_refused(self, wire: Wire) -> None:
        """After initialize, an MCP-Protocol-Version header this server does not speak is 400, naming the ones
        it does; a supported one (or none) is served."""
        sid = wire.open()
        status, _, body = wire.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                       headers={"mcp-session-id": sid, "mcp-protocol-version": "2026-07-28"})
        assert status == 400 and "2025-11-25" in _error(body)[1]
        assert wire.rpc(sid, "ping")["result"] == {}


class TestMethods:
    def test_tools_list_is_simworlds_schema_with_read_only_hints(self, wire: Wire) -> None:
        """tools/list gives the scenario's tools in order with their parameters as inputSchema."""
        tools = wire.rpc(wire.open(), "tools/list")["result"]["tools"]
        expected = [TOOLS[name].schema() for name in SPLIT.tools]
        assert [(t["name"], t["description"], t["inputSchema"]) for t in tools] == [
            (s["name"], s["description"], s["parameters"]) for s in expected]
        assert {t["name"] for t in tools if t["annotations"]["readOnlyHint"]} == {
            n for n in SPLIT.tools if TOOLS[n].kind is Kind.READ}

    def test_tools_call_ok_and_error_results(self, wire: Wire) -> None:
        """An ok call is its canonical JSON text and structured content; a bad argument is isError with
        simworld's message."""
        sid = wire.open()
        good = wire.rpc(sid, "tools/call", {"name": "get_plan", "arguments": {"plan_id": VARIABLES["plan_id"]}})
        bad = wire.rpc(sid, "tools/call", {"name": "get_plan", "arguments": {"plan_id": "nope"}}, request_id="x")
        assert good["result"]["isError"] is False
        assert orjson.loads(good["result"]["content"][0]["text"]) == good["result"]["structuredContent"]
        assert good["result"]["structuredContent"]["id"] == VARIABLES["plan_id"]
        assert bad["result"]["isError"] is True and "No plan with plan_id='nope'" in bad["result"]["content"][0]["text"]
        assert bad["result"]["structuredContent"]["status"] == "error"

    def test_ping_and_prompts(self, wire: Wire) -> None:
        """ping is an empty result; prompts/list names `task`, whose one message is the instructions; another
        prompt is -32602."""
        sid = wire.open()
        assert wire.rpc(sid, "ping")["result"] == {}
        assert [p["name"] for p in wire.rpc(sid, "prompts/list")["result"]["prompts"]] == ["task"]
        task = wire.rpc(sid, "prompts/get", {"name": "task"})["result"]
        assert [m["content"]["text"] for m in task["messages"]] == [wire.sessions.instructions]
        assert wire.rpc(sid, "prompts/get", {"name": "other"})["error"]["code"] == -32602

    def test_unknown_method_and_bad_params_are_json_rpc_errors(self, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """An unknown method is -32601 naming it; tools/call without a name or with non-object arguments is
        -32602; none of them is a call of the episode."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        wire = Wire(tmp_path / "out")
        sid = wire.open()
        unknown = wire.rpc(sid, "resources/list")["error"]
        assert (unknown["code"], unknown["data"]) == (-32601, "resources/list")
        for params in (None, {"nam": "get_plan"}, {"name": 3}, {"name": "get_plan", "arguments": [1]}):
            assert wire.rpc(sid, "tools/call", params)["error"]["code"] == -32602
        wire.request("DELETE", headers={"mcp-session-id": sid})
        (line,) = [orjson.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_bytes().splitlines()]
        assert line["counters"]["tool_calls"] == 0


class TestMalformedRequests:
    def test_malformed_json_is_a_parse_error(self, wire: Wire) -> None:
        """A body that is not JSON is 400 with -32700 and a null id."""
        status, _, body = wire.request(body=b'{"jsonrpc": "2.0", "id": 1,', headers={"mcp-session-id": wire.open()})
        assert status == 400 and _error(body)[0] == -32700 and orjson.loads(body)["id"] is None

    def test_a_batch_is_refused(self, wire: Wire) -> None:
        """A JSON-RPC batch (an array) is 400 with -32600 saying batches are not supported."""
        status, _, body = wire.request(body=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
                                       headers={"mcp-session-id": wire.open()})
        assert status == 400 and _error(body)[0] == -32600 and "batch" in _error(body)[1]

    def test_messages_that_are_not_json_rpc_are_invalid_requests(self, wire: Wire) -> None:
        """A scalar, a missing or wrong jsonrpc, a non-string method, an id that is neither string nor integer, and
        a message with neither method nor result are each 400 with -32600."""
        sid = wire.open()
        for message in (3, {"id": 1, "method": "ping"}, {"jsonrpc": "1.0", "id": 1, "method": "ping"},
                        {"jsonrpc": "2.0", "id": 1, "method": 7}, {"jsonrpc": "2.0", "id": [1], "method": "ping"},
                        {"jsonrpc": "2.0", "id": True, "method": "ping"}, {"jsonrpc": "2.0", "id": 1}):
            status, _, body = wire.request(body=message, headers={"mcp-session-id": sid})
            assert (status, _error(body)[0]) == (400, -32600), message

    def test_wrong_content_type_or_accept(self, wire: Wire) -> None:
        """A POST not declared as application/json is 415; one whose Accept excludes JSON is 406; */* is fine."""
        sid = wire.open()
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert wire.request(body=ping, headers={"mcp-session-id": sid, "content-type": "text/plain"})[0] == 415
        assert wire.request(body=ping, headers={"mcp-session-id": sid, "accept": "text/event-stream"})[0] == 406
        assert wire.request(body=ping, headers={"mcp-session-id": sid, "accept": "*/*",
                                                "content-type": "application/json; charset=utf-8"})[0] == 200

    def test_a_body_over_the_limit_is_413(self, wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
        """A body larger than the limit is refused with 413 before it is parsed."""
        sid = wire.open()
        monkeypatch.setattr(serve_http, "MAX_BODY", 64)
        status, _, body = wire.request(body={"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "y" * 80}},
                                       headers={"mcp-session-id": sid})
        assert status == 413 and "64 bytes" in _error(body)[1]
        assert wire.rpc(sid, "ping")["result"] == {}


class TestSessions:
    def test_a_request_without_a_session_or_with_an_unknown_one(self, wire: Wire) -> None:
        """Outside initialize, no mcp-session-id is 400 and an unknown one is 404; initialize with one is 400."""
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "get_plan", "arguments": {}}}
        missing, _, body = wire.request(body=call)
        unknown, _, unknown_body = wire.request(body=call, headers={"mcp-session-id": "f" * 32})
        again, _, _ = wire.request(body=INIT, headers={"mcp-session-id": wire.open()})
        assert (missing, unknown, again) == (400, 404, 400)
        assert orjson.loads(body)["id"] == 5 and "initialize" in _error(unknown_body)[1]

    def test_initialize_beyond_the_session_limit_is_503(self, wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
        """With as many sessions open as the limit allows, initialize is 503 and opens nothing; ending one (DELETE)
        makes room."""
        monkeypatch.setattr(serve_http, "MAX_SESSIONS", 2)
        first, _ = wire.open(), wire.open()
        status, headers, body = wire.request(body=INIT)
        assert (status, _error(body)[0]) == (503, -32603) and b"mcp-session-id" not in headers
        assert len(wire.sessions) == 2
        wire.request("DELETE", headers={"mcp-session-id": first})
        assert wire.request(body=INIT)[0] == 200

    def test_notifications_and_responses_are_accepted_with_202(self, wire: Wire) -> None:
        """A notification, or a response to a request, is 202 with no body; the session goes on."""
        sid = wire.open()
        for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
                        {"jsonrpc": "2.0", "id": 9, "result": {}}):
            assert wire.request(body=message, headers={"mcp-session-id": sid})[::2] == (202, b"")
        assert wire.rpc(sid, "ping")["result"] == {}

    def test_delete_ends_the_session_and_records_its_episode(self, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """DELETE is 200 and writes the episode as left by its client; the session is then 404 (to DELETE too)."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        wire = Wire(tmp_path / "out")
        sid = wire.open()
        wire.rpc(sid, "tools/call", {"name": "get_plan", "arguments": {"plan_id": VARIABLES["plan_id"]}})
        assert wire.request("DELETE", headers={"mcp-session-id": sid})[0] == 200
        assert wire.request("DELETE", headers={"mcp-session-id": sid})[0] == 404
        assert wire.request(body={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                            headers={"mcp-session-id": sid})[0] == 404
        (line,) = [orjson.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_bytes().splitlines()]
        assert (line["stop_reason"], line["error"], line["counters"]["tool_calls"]) == (
            "agent_stopped", ENDED_BY_CLIENT, 1)

    def test_a_session_idle_past_the_timeout_is_swept_and_a_request_keeps_it(self, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
        """A request marks its session active; one that sends nothing for idle_timeout_s is ended by the sweep as
        left by its client, and is then 404."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        wire = Wire(tmp_path / "out")
        quiet, busy = wire.open(), wire.open()
        for sid in (quiet, busy):
            session = wire.sessions.get(sid)
            assert session is not None
            session.last_active -= 61.0
        wire.rpc(busy, "ping")
        wire.sessions.sweep(wall_monotonic())
        assert wire.sessions.get(quiet) is None and wire.sessions.get(busy) is not None
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert wire.request(body=ping, headers={"mcp-session-id": quiet})[0] == 404
        (line,) = [orjson.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_bytes().splitlines()]
        assert line["error"] == "the client left: no request for 60 s"

    def test_get_is_405_and_other_methods_too(self, wire: Wire) -> None:
        """GET (no server-initiated stream) and PUT are 405 with Allow: POST, DELETE."""
        sid = wire.open()
        for method in ("GET", "PUT"):
            status, headers, _ = wire.request(method, headers={"mcp-session-id": sid})
            assert status == 405 and headers[b"allow"] == b"POST, DELETE"

    def test_lifespan_shutdown_records_every_open_session(self, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
        """At the ASGI lifespan's shutdown every open session's episode is written as the server stopping."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        wire = Wire(tmp_path / "out")
        for _ in range(2):
            wire.open()
        messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> MutableMapping[str, Any]:
            return next(messages)

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        anyio.run(wire.app, {"type": "lifespan"}, receive, send)
        assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
        lines = [orjson.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_bytes().splitlines()]
        assert [line["error"] for line in lines] == [ENDED_BY_SERVER] * 2 and len(wire.sessions) == 0


class TestRecording:
    def test_the_call_that_ends_an_episode_is_answered_before_it_is_graded(self, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
        """The reply to a terminal call goes out before the episode's result line and event file are written (no
        call waits for a grade), and both are written before the request is done."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        out = tmp_path / "out"
        wire = Wire(out)
        sid = wire.open()
        written_at_reply: list[tuple[bool, list[str]]] = []

        def on_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.body":
                events = sorted(p.name for p in (out / "events").glob("*.jsonl")) if (out / "events").exists() else []
                written_at_reply.append(((out / "results.jsonl").exists(), events))

        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "decline", "arguments": {"reason": "Testing."}}}
        status, _, body = wire.request(body=call, headers={"mcp-session-id": sid}, on_send=on_send)
        assert status == 200 and "The episode is over" in orjson.loads(body)["result"]["content"][-1]["text"]
        assert written_at_reply == [(False, [])]
        (line,) = [orjson.loads(x) for x in (out / "results.jsonl").read_bytes().splitlines()]
        assert (line["outcome"], line["stop_reason"], line["trial"]) == ("decline", "terminal", 0)
        assert [p.name for p in (out / "events").iterdir()] == [f"{SCENARIO}__seed-{SEED}.jsonl"]

    def test_an_ended_episode_not_yet_recorded_is_recorded_when_its_session_closes(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """An episode ended by a call but not yet recorded (its reply still on its way) is written, as it ended,
        when its session is closed (DELETE, the sweep, the server stopping), and only once."""
        monkeypatch.setattr("sys.stderr", io.StringIO())
        out = tmp_path / "out"
        sessions = EpisodeSessions(SPLIT, SEED, out)
        session = sessions.open("a")
        session.call("decline", {"reason": "Testing."})
        assert not (out / "results.jsonl").exists()
        sessions.close("a", ENDED_BY_CLIENT)
        (line,) = [orjson.loads(x) for x in (out / "results.jsonl").read_bytes().splitlines()]
        assert (line["outcome"], line["stop_reason"], line["error"]) == ("decline", "terminal", None)
        session.record()
        assert len((out / "results.jsonl").read_bytes().splitlines()) == 1


class TestOriginChecks:
    def test_a_foreign_host_or_origin_is_refused_on_loopback(self, wire: Wire) -> None:
        """On loopback a Host naming another machine is 421 and a foreign Origin 403 (DNS rebinding); loopback
        names with any port, and no Origin, are served."""
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        sid = wire.open()
        assert wire.request(body=ping, headers={"mcp-session-id": sid, "host": "evil.example:8000"})[0] == 421
        assert wire.request(body=ping, headers={"mcp-session-id": sid, "origin": "http://evil.example"})[0] == 403
        for host, origin in [("localhost:1234", "http://localhost:1234"), ("[::1]:80", "http://127.0.0.1:9")]:
            assert wire.request(body=ping, headers={"mcp-session-id": sid, "host": host, "origin": origin})[0] == 200

    def test_another_path_is_404_and_the_token_is_checked_first(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Only /mcp is served (404 elsewhere); with a token, a request without it is 401 on any path."""
        wire = Wire(token="tok")
        assert wire.request(body=INIT, path="/other", headers={"authorization": "Bearer tok"})[0] == 404
        assert wire.request(body=INIT, path="/other")[0] == 401
        assert wire.request(body=INIT, headers={"authorization": "Bearer tok"})[0] == 200


class TestConcurrentClients:
    def test_several_official_clients_at_once_never_see_each_others_episodes(self, tmp_path: Path) -> None:
        """Eight SDK clients play the reference solution at once on one server: every reply equals a lone
        session's, and eight passing episodes of exactly the solution's calls are written, with distinct
        trials."""
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        out = tmp_path / "out"
        steps = SPLIT.solutions[0]

        async def play(url: str) -> list[str]:
            texts: list[str] = []
            results: list[Any] = []
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as opened:
                session: Any = opened
                await session.initialize()
                for i, step in enumerate(steps):
                    reply = await session.call_tool(step.tool, resolve_args(step.args, VARIABLES, results, f"{i}"))
                    assert not reply.is_error
                    texts.append("\n".join(block.text for block in reply.content))
                    results.append(orjson.loads(reply.content[0].text))
                    await anyio.sleep(0)  # interleave the sessions call by call
            return texts

        async def main(url: str) -> tuple[list[str], list[list[str]]]:
            with anyio.fail_after(TIMEOUT):
                alone = await play(url)
                together: list[list[str]] = []

                async def one() -> None:
                    together.append(await play(url))

                async with anyio.create_task_group() as tg:
                    for _ in range(8):
                        tg.start_soon(one)
                return alone, together

        with http_server(tmp_path / "server.log", "--scenario", SCENARIO, "--seed", str(SEED), "--out",
                         str(out)) as (proc, port):
            alone, together = anyio.run(main, f"http://127.0.0.1:{port}/mcp")
            lines = wait_for_results(out, 9, proc)
        assert len(together) == 8 and all(texts == alone for texts in together)
        assert all(line["passed"] and line["counters"]["tool_calls"] == len(steps) for line in lines)
        assert sorted(line["trial"] for line in lines) == list(range(9))
