"""The MCP server: the SDK's own client plays episodes against a served scenario, over stdio and HTTP.

The mcp SDK is in the test extra (``pip install -e '.[test]'``), so these tests need it and fail,
never skip, without it: a missing SDK must not turn into a silently green run. Only
``test_serve_without_mcp_*`` and ``test_module_imports_without_mcp`` simulate its absence.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp_helpers import http_server, results, stop, wait_for_results

from simworld._episode.replay import replay
from simworld._episode.steps import StepsAgent
from simworld._running.runner import run_one
from simworld._scenario.scenario import load_suite
from simworld._world.templates import resolve_args
from simworld._world.tools import TOOLS
from simworld.errors import SimworldError

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = "split-balance-three-ways"
SEED = 3
#: How the server is launched until `simworld serve` is wired into the CLI.
SERVE = ["-m", "simworld", "serve"]
#: Real seconds any one client session may take, start to finish.
TIMEOUT = 90

(SPLIT,) = load_suite(None, [SCENARIO])
VARIABLES = dict(SPLIT.instance(SEED).vars)

Body = Callable[[Any, Any], Awaitable[Any]]


def _env() -> dict[str, str]:
    """What the server subprocess inherits beyond the SDK's safe defaults."""
    keep = ("HYPOTHESIS_STORAGE_DIRECTORY", "PYTHONPATH")
    return {k: os.environ[k] for k in keep if k in os.environ}


def _over_stdio(tmp_path: Path, body: Body, *extra: str) -> Any:
    """Launch the server over stdio, initialize a ClientSession, and return what ``body(session, init)`` returns."""
    import anyio  # installed with mcp
    import mcp  # noqa: F401  (the test extra installs it; a missing SDK must fail, not skip)
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), env=_env(), args=[
        *SERVE, "--scenario", SCENARIO, "--seed", str(SEED), "--out", str(tmp_path / "out"), *extra])

    async def main() -> Any:
        with (tmp_path / "server.log").open("w") as errlog, anyio.fail_after(TIMEOUT):
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                return await body(session, init)

    try:
        return anyio.run(main)
    except BaseException:
        sys.stderr.write((tmp_path / "server.log").read_text() if (tmp_path / "server.log").exists() else "")
        raise


def _text(reply: Any) -> str:
    return "\n".join(block.text for block in reply.content)


def _results(tmp_path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_bytes().splitlines()]


async def _play_reference(session: Any) -> list[Any]:
    """Play the scenario's first solution through the session; return every reply."""
    results: list[Any] = []
    replies = []
    for i, step in enumerate(SPLIT.solutions[0]):
        args = resolve_args(step.args, VARIABLES, results, f"t step {i}")
        reply = await session.call_tool(step.tool, args)
        assert not reply.is_error, _text(reply)
        results.append(orjson.loads(reply.content[0].text))
        replies.append(reply)
    return replies


class TestToolList:
    def test_tools_and_input_schemas_are_simworlds(self, tmp_path: Path) -> None:
        """list_tools gives the scenario's tools in order, each with simworld's description and parameters."""

        async def body(session: Any, init: Any) -> Any:
            return (await session.list_tools()).tools

        tools = _over_stdio(tmp_path, body)
        expected = [TOOLS[name].schema() for name in SPLIT.tools]
        assert [(t.name, t.description, t.input_schema) for t in tools] == [
            (s["name"], s["description"], s["parameters"]) for s in expected]
        read_only = {t.name for t in tools if t.annotations and t.annotations.read_only_hint}
        assert read_only == {n for n in SPLIT.tools if TOOLS[n].kind.value == "read"}


class TestInstructions:
    def test_instructions_and_task_prompt_carry_request_and_policy_but_not_the_scenario(self, tmp_path: Path) -> None:
        """The instructions and the `task` prompt hold the request and policy; the scenario id is never shown."""

        async def body(session: Any, init: Any) -> Any:
            prompts = (await session.list_prompts()).prompts
            task = await session.get_prompt("task")
            return init, prompts, task

        init, prompts, task = _over_stdio(tmp_path, body)
        request = SPLIT.request(VARIABLES)
        policy = SPLIT.snapshot.policy.render(VARIABLES["currency"])
        assert request in init.instructions and policy in init.instructions
        assert [p.name for p in prompts] == ["task"]
        assert [m.content.text for m in task.messages] == [init.instructions]
        shown = init.instructions + init.server_info.model_dump_json()
        assert SCENARIO not in shown and init.server_info.name == "simworld"


class TestReferenceSolution:
    def test_reference_solution_passes_and_is_written_like_simworld_run(self, tmp_path: Path) -> None:
        """The reference solution played over MCP passes; results.jsonl and the event log match a direct run."""

        async def body(session: Any, init: Any) -> Any:
            return await _play_reference(session)

        replies = _over_stdio(tmp_path, body)
        assert "The episode is over" in _text(replies[-1])
        (line,) = _results(tmp_path)
        assert line["passed"] is True and line["outcome"] == "act" and line["stop_reason"] == "terminal"
        assert (line["scenario"], line["seed"], line["agent"], line["hook_errors"]) == (SCENARIO, SEED, "mcp", [])
        events = tmp_path / "out" / "events" / f"{SCENARIO}__seed-{SEED}.jsonl"
        assert events.exists()
        assert replay(events, {SCENARIO: SPLIT}).final_state_hash == line["state_hash"]
        _, direct = run_one(SPLIT, SEED, lambda: StepsAgent(SPLIT.solutions[0], VARIABLES, "t"))
        skip = ("agent", "hook_errors")
        assert {k: v for k, v in line.items() if k not in skip} == {k: v for k, v in direct.items() if k not in skip}


class TestBadArgument:
    def test_bad_argument_is_a_tool_error_with_simworlds_message(self, tmp_path: Path) -> None:
        """get_plan with an unknown plan id comes back with isError and the message; the session goes on."""

        async def body(session: Any, init: Any) -> Any:
            bad = await session.call_tool("get_plan", {"plan_id": "nope"})
            good = await session.call_tool("get_plan", {"plan_id": VARIABLES["plan_id"]})
            return bad, good

        bad, good = _over_stdio(tmp_path, body)
        assert bad.is_error is True
        assert "No plan with plan_id='nope'" in _text(bad)
        assert bad.structured_content["status"] == "error"
        assert good.is_error is False and orjson.loads(good.content[0].text)["id"] == VARIABLES["plan_id"]
        (line,) = _results(tmp_path)  # the client left without a terminal call: recorded as stopped, not dropped
        assert line["stop_reason"] == "agent_stopped" and line["outcome"] is None


class TestDeniedCall:
    def test_denied_call_is_a_tool_error_with_simworlds_message(self, tmp_path: Path) -> None:
        """defer_instalment on a paid instalment is denied, and reaches the client as a tool error."""

        async def body(session: Any, init: Any) -> Any:
            return await session.call_tool("defer_instalment", {"plan_id": VARIABLES["plan_id"],
                                                                "seq": VARIABLES["paid_seq"], "mode": "end"})

        reply = _over_stdio(tmp_path, body)
        assert reply.is_error is True
        assert "paid instalments are immutable" in _text(reply)
        assert reply.structured_content["status"] == "denied"


class TestAfterTheEnd:
    def test_a_call_after_the_terminal_tool_is_an_error_and_the_episode_is_graded(self, tmp_path: Path) -> None:
        """After decline, any call is a tool error saying the episode is over; the declined episode is written."""

        async def body(session: Any, init: Any) -> Any:
            ended = await session.call_tool("decline", {"reason": "Testing."})
            after = await session.call_tool("get_plan", {"plan_id": VARIABLES["plan_id"]})
            return ended, after

        ended, after = _over_stdio(tmp_path, body)
        assert ended.is_error is False and orjson.loads(ended.content[0].text)["outcome"] == "decline"
        assert after.is_error is True and "episode is over" in _text(after)
        (line,) = _results(tmp_path)
        assert line["outcome"] == "decline" and line["passed"] is False  # this scenario allows act only
        assert line["counters"]["tool_calls"] == 1  # the refused call is not part of the episode


class TestHttp:
    def test_streamable_http_serves_the_episode_on_localhost(self, tmp_path: Path) -> None:
        """With --transport http the SDK's streamable HTTP client lists the tools and ends the episode."""
        import anyio
        import mcp  # noqa: F401  (the test extra installs it; a missing SDK must fail, not skip)
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log = (tmp_path / "server.log").open("w")
        proc = subprocess.Popen([sys.executable, *SERVE, "--scenario", SCENARIO, "--seed", str(SEED),
                                 "--transport", "http", "--port", str(port), "--out", str(tmp_path / "out")],
                                cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

        async def main() -> Any:
            with anyio.fail_after(TIMEOUT):
                async with (streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                            ClientSession(read, write) as session):
                    await session.initialize()
                    tools = (await session.list_tools()).tools
                    ended = await session.call_tool("decline", {"reason": "Testing."})
                    return tools, ended

        try:
            deadline = time.monotonic() + TIMEOUT
            while True:
                assert proc.poll() is None, (tmp_path / "server.log").read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the HTTP server never listened"
                    time.sleep(0.1)
            tools, ended = anyio.run(main)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
            log.close()
        assert [t.name for t in tools] == list(SPLIT.tools)
        assert ended.is_error is False
        (line,) = _results(tmp_path)
        assert line["outcome"] == "decline" and line["agent"] == "mcp"


class TestMissingDependency:
    def test_serve_without_mcp_raises_a_simworld_error_naming_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With mcp not importable, serve() raises MissingDependency with the install command."""
        from simworld._edges.serve import MissingDependency, serve

        for name in ["mcp", *(n for n in list(sys.modules) if n.startswith("mcp."))]:
            monkeypatch.setitem(sys.modules, name, None)
        with pytest.raises(MissingDependency) as caught:
            serve(SPLIT, SEED)
        assert isinstance(caught.value, SimworldError) and isinstance(caught.value, ImportError)
        assert str(caught.value) == ("simworld serve requires the optional dependency mcp. "
                                     "Install with: pip install 'simworld[mcp]'")

    def test_module_imports_without_mcp(self) -> None:
        """simworld.mcp_server imports mcp only inside serve(), so importing it never needs the extra."""
        done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['mcp'] = None; "
                               "import simworld.mcp_server"], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr


class TestBadTransport:
    def test_unknown_transport_is_a_simworld_error(self) -> None:
        """An unknown transport is refused before anything is served."""
        from simworld._edges.serve import ServeError, serve

        with pytest.raises(ServeError, match="--transport 'sse' is unknown; use one of stdio, http"):
            serve(SPLIT, SEED, transport="sse")


def _http_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def _json_call(session: Any, tool: str, args: dict[str, Any]) -> Any:
    reply = await session.call_tool(tool, args)
    assert not reply.is_error, _text(reply)
    return orjson.loads(reply.content[0].text)


async def _play_until_terminal(session: Any) -> list[Any]:
    """Play the first solution up to (not including) its terminal call; return the results, for templates."""
    results: list[Any] = []
    for i, step in enumerate(SPLIT.solutions[0][:-1]):
        results.append(await _json_call(session, step.tool, resolve_args(step.args, VARIABLES, results, f"t {i}")))
    return results


def _replays_to(out: Path, name: str, line: dict[str, Any]) -> bool:
    """Whether the event file ``name`` rebuilds the end state the result line names."""
    return replay(out / "events" / name, {SCENARIO: SPLIT}).final_state_hash == line["state_hash"]


class TestHttpSessions:
    def test_two_concurrent_sessions_are_two_independent_episodes(self, tmp_path: Path) -> None:
        """Two MCP sessions open on one server at once: B never sees A's new schedule, B's decline does not end A's
        episode, and each is written as its own episode (one result line and one event file each)."""
        import anyio
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client


        out = tmp_path / "out"
        plan = {"plan_id": VARIABLES["plan_id"]}
        finish = SPLIT.solutions[0][-1]

        async def main(url: str) -> Any:
            with anyio.fail_after(TIMEOUT):
                async with (streamable_http_client(url) as (read_a, write_a), ClientSession(read_a, write_a) as a,
                            streamable_http_client(url) as (read_b, write_b), ClientSession(read_b, write_b) as b):
                    await a.initialize()
                    await b.initialize()
                    before = await _json_call(a, "get_plan", plan)
                    results = await _play_until_terminal(a)  # A writes its new schedule
                    after_a = await _json_call(a, "get_plan", plan)
                    seen_by_b = await _json_call(b, "get_plan", plan)
                    declined = await b.call_tool("decline", {"reason": "Testing."})
                    after_b_ended = await _json_call(a, "get_plan", plan)
                    finished = await a.call_tool(finish.tool, resolve_args(finish.args, VARIABLES, results, "t"))
                    return before, after_a, seen_by_b, declined, after_b_ended, finished

        with http_server(tmp_path / "server.log", "--scenario", SCENARIO, "--seed", str(SEED), "--out",
                         str(out)) as (proc, port):
            before, after_a, seen_by_b, declined, after_b_ended, finished = anyio.run(main, _http_url(port))
            lines = wait_for_results(out, 2, proc)
        assert after_a["instalments"] != before["instalments"]  # A's write landed in A's world...
        assert seen_by_b["instalments"] == before["instalments"]  # ...and only there
        assert not declined.is_error and "The episode is over" in _text(declined)
        assert after_b_ended["instalments"] == after_a["instalments"]  # B's terminal call did not end A's episode
        assert not finished.is_error and "The episode is over" in _text(finished)
        by_outcome = {line["outcome"]: line for line in lines}
        assert set(by_outcome) == {"act", "decline"} and len(lines) == 2
        assert by_outcome["act"]["passed"] is True
        assert by_outcome["decline"]["counters"]["tool_calls"] == 2  # its own get_plan and decline, none of A's
        assert sorted(line["trial"] for line in lines) == [0, 1]
        names = {0: f"{SCENARIO}__seed-{SEED}.jsonl", 1: f"{SCENARIO}__seed-{SEED}__trial-1.jsonl"}
        assert sorted(p.name for p in (out / "events").iterdir()) == sorted(names.values())
        for line in lines:
            assert _replays_to(out, names[line["trial"]], line)

    def test_a_session_that_leaves_before_a_terminal_call_is_recorded(self, tmp_path: Path) -> None:
        """A session ended by its client (DELETE) after a write, with no terminal call, is written as agent_stopped
        with an error saying the client left; its write is in the recorded end state."""
        import anyio
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client


        out = tmp_path / "out"

        async def main(url: str) -> None:
            with anyio.fail_after(TIMEOUT):
                async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    await _play_until_terminal(session)

        with http_server(tmp_path / "server.log", "--scenario", SCENARIO, "--seed", str(SEED), "--out",
                         str(out)) as (proc, port):
            anyio.run(main, _http_url(port))
            (line,) = wait_for_results(out, 1, proc)
        assert (line["stop_reason"], line["outcome"], line["passed"]) == ("agent_stopped", None, False)
        assert line["error"] == "the client ended its MCP session before a terminal call"
        assert line["counters"]["tool_calls"] == len(SPLIT.solutions[0]) - 1
        assert _replays_to(out, f"{SCENARIO}__seed-{SEED}.jsonl", line)

    def test_stopping_the_server_records_the_sessions_still_open(self, tmp_path: Path) -> None:
        """A session whose client went away without ending it is written when the server is stopped (SIGTERM)."""
        import anyio
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client


        out = tmp_path / "out"

        async def main(url: str) -> None:
            with anyio.fail_after(TIMEOUT):
                async with (streamable_http_client(url, terminate_on_close=False) as (read, write),
                            ClientSession(read, write) as session):
                    await session.initialize()
                    await _json_call(session, "get_plan", {"plan_id": VARIABLES["plan_id"]})

        with http_server(tmp_path / "server.log", "--scenario", SCENARIO, "--seed", str(SEED), "--out",
                         str(out)) as (proc, port):
            anyio.run(main, _http_url(port))
            assert results(out) == []  # the session is still open
            stop(proc)
        (line,) = results(out)
        assert (line["stop_reason"], line["error"]) == ("agent_stopped", "the server stopped before a terminal call")
        assert line["counters"]["tool_calls"] == 1


class TestStdioDisconnect:
    def test_a_client_that_disconnects_before_a_terminal_call_is_recorded(self, tmp_path: Path) -> None:
        """Over stdio, a client that writes and then disconnects is written as agent_stopped, its write included."""

        async def body(session: Any, init: Any) -> Any:
            return await _play_until_terminal(session)

        _over_stdio(tmp_path, body)
        (line,) = _results(tmp_path)
        assert (line["stop_reason"], line["outcome"], line["passed"]) == ("agent_stopped", None, False)
        assert line["error"] == "the client disconnected before a terminal call"
        assert line["counters"]["tool_calls"] == len(SPLIT.solutions[0]) - 1
        assert _replays_to(tmp_path / "out", f"{SCENARIO}__seed-{SEED}.jsonl", line)

    def test_a_second_server_into_the_same_out_appends_a_new_trial(self, tmp_path: Path) -> None:
        """Two stdio servers run one after the other into one --out write two lines and two event files."""

        async def body(session: Any, init: Any) -> Any:
            return await session.call_tool("decline", {"reason": "Testing."})

        _over_stdio(tmp_path, body)
        _over_stdio(tmp_path, body)
        lines = _results(tmp_path)
        assert [line["trial"] for line in lines] == [0, 1] and all(line["outcome"] == "decline" for line in lines)
        assert len(list((tmp_path / "out" / "events").iterdir())) == 2

    def test_a_stdio_server_stopped_by_sigterm_records_its_episode(self, tmp_path: Path) -> None:
        """SIGTERM to a stdio server whose client is still attached writes the episode as the server stopping."""
        import signal

        out = tmp_path / "out"
        proc = subprocess.Popen([sys.executable, *SERVE, "--scenario", SCENARIO, "--seed", str(SEED), "--out",
                                 str(out)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            # Once it has answered initialize it is serving (a signal before then is Python's default: no record).
            proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
                + b"\n")
            proc.stdin.flush()
            assert orjson.loads(proc.stdout.readline())["id"] == 1
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
        (line,) = results(out)
        assert line["error"] == "the server stopped before a terminal call", err.decode()


class TestTimeBudget:
    def test_a_client_gone_silent_is_recorded_as_timeout(self, tmp_path: Path) -> None:
        """A session that calls once and then says nothing is ended as timeout once its budget, counted from that
        first call, is spent: without waiting for another call, and with the session still open."""
        import anyio
        from helpers import copy_suite
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        suite = copy_suite(tmp_path / "suite", SCENARIO, budget={"max_steps": 20, "timeout_s": 1})
        out = tmp_path / "out"

        async def main(url: str) -> Any:
            with anyio.fail_after(TIMEOUT):
                async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    await _json_call(session, "get_plan", {"plan_id": VARIABLES["plan_id"]})
                    (line,) = await anyio.to_thread.run_sync(wait_for_results, out, 1)
                    late = await session.call_tool("get_plan", {"plan_id": VARIABLES["plan_id"]})
                    return line, late

        with http_server(tmp_path / "server.log", "--scenario", SCENARIO, "--seed", str(SEED), "--suite", str(suite),
                         "--out", str(out)) as (_, port):
            line, late = anyio.run(main, _http_url(port))
        assert (line["stop_reason"], line["counters"]["tool_calls"]) == ("timeout", 1)
        assert "timeout_s (1 s)" in line["error"]
        assert late.is_error and "the time budget is spent" in _text(late)
        assert len(results(out)) == 1  # the session's DELETE afterwards does not record it twice
