"""The MCP server: the SDK's own client plays episodes against a served scenario, over stdio and HTTP.

Tests that need the client skip when the optional dependency mcp is not installed.
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

from simworld.agents import StepsAgent
from simworld.errors import SimworldError
from simworld.replay import replay
from simworld.runner import run_one
from simworld.scenario import load_suite
from simworld.templates import resolve_args
from simworld.tools import TOOLS

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
        assert not (tmp_path / "out" / "results.jsonl").exists()  # the episode never ended


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
        from simworld.mcp_server import MissingDependency, serve

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
        from simworld.mcp_server import ServeError, serve

        with pytest.raises(ServeError, match="--transport 'sse' is unknown; use one of stdio, http"):
            serve(SPLIT, SEED, transport="sse")
