"""An amount means the same on every agent path: a Python agent, a process (cmd:), a model (openai:), MCP, a file.

Every path reads a JSON number as the double it denotes (orjson for cmd: and scripted:, the
stdlib for openai:, pydantic for MCP; a Python agent's float already is one), and the money
parser reads a double only where it is exact (below 10**13 in a 2-decimal currency, 10**12 in
a 3-decimal one), asking for a decimal string beyond. So one action, written as the same JSON
text, gets the same result on every path: the same amount, or the same error.
"""

from __future__ import annotations

import ast
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from test_llm import Stub

from simworld._agents.kinds import build_agent_factory
from simworld._agents.llm import OpenAIAgent
from simworld._edges.serve import EpisodeSession
from simworld._episode.environment import Environment
from simworld._episode.play import play
from simworld._running.runner import run_one
from simworld._scenario.scenario import load_suite
from simworld._world.events import Event

SID = "premium-increase-midterm"
(SCENARIO,) = load_suite(None, [SID])
SEEDS = (0, 1)  # EUR (2 decimals) and KWD (3 decimals) at these seeds
#: Amounts as an agent writes them in JSON: numbers (the first two lost digits through a double) and strings.
#: "1.0000000000000001" has more digits than a double holds: every path reads it as the double 1.0.
LITERALS = ["500000000000000.01", "12345678901234.567", "1234.5", "1234.567", "1e3", "100", "99999999999.999",
            "1.0000000000000001", '"1234.50"', '"1e3"']
DECLINE = '{"tool": "decline", "args": {"reason": "Testing amounts."}}'
#: A process agent that answers each observation with the next line of a file.
ECHO = """import sys
lines = open(sys.argv[1]).read().splitlines()
for line in lines:
    if not sys.stdin.readline():
        break
    print(line, flush=True)
sys.stdin.read()
"""


def args_text(seed: int, literal: str) -> str:
    """quote_premium_change's arguments as JSON text, with ``literal`` as the new annual premium."""
    v = SCENARIO.instance(seed).vars
    return (f'{{"policy_id": "{v["policy_id"]}", "new_annual_premium": {literal}, '
            f'"effective_date": "{v["term_start"]}"}}')


def action_text(seed: int, literal: str) -> str:
    """The quote_premium_change call as one JSON line."""
    return '{"tool": "quote_premium_change", "args": ' + args_text(seed, literal) + "}"


def by_python(seed: int, literal: str, tmp_path: Path) -> Event:
    env = Environment(SCENARIO, seed, agent_name="python")
    env.reset()
    action = json.loads(action_text(seed, literal))
    action["args"]["new_annual_premium"] = ast.literal_eval(literal)  # the literal as Python code reads it
    env.step(action)
    return env.world.events[0]


def by_scripted_file(seed: int, literal: str, tmp_path: Path) -> Event:
    script = tmp_path / "script.jsonl"
    script.write_text(action_text(seed, literal) + "\n" + DECLINE + "\n")
    episode = play(Environment(SCENARIO, seed, agent_name="scripted"), build_agent_factory(f"scripted:{script}"))
    return episode.events[0]


def by_process(seed: int, literal: str, tmp_path: Path) -> Event:
    (tmp_path / "echo.py").write_text(ECHO)
    (tmp_path / "lines.jsonl").write_text(action_text(seed, literal) + "\n" + DECLINE + "\n")
    factory = build_agent_factory(f"cmd:{sys.executable} {tmp_path / 'echo.py'} {tmp_path / 'lines.jsonl'}")
    episode = play(Environment(SCENARIO, seed, agent_name="cmd"), factory)
    assert episode.error is None, episode.error
    return episode.events[0]


def by_model(seed: int, literal: str, tmp_path: Path) -> Event:
    action, decline = json.loads(action_text(seed, literal)), json.loads(DECLINE)
    arguments = args_text(seed, literal)  # a model's tool-call arguments are JSON text, the literal as written
    stub = Stub()
    stub.thread.start()
    try:
        for i, (name, args) in enumerate([(action["tool"], arguments), (decline["tool"], json.dumps(decline["args"]))]):
            stub.raw_reply({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}]}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}, 200)
        episode, _ = run_one(SCENARIO, seed, lambda: OpenAIAgent("stub-model", base_url=stub.base_url))
    finally:
        stub.release.set()
        stub.server.shutdown()
        stub.server.server_close()
    return episode.events[0]


def by_mcp(seed: int, literal: str, tmp_path: Path) -> Event:
    import mcp.types as types

    # A tools/call request as the client sends it, read the way the SDK's server transport reads it.
    line = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "quote_premium_change", '
            '"arguments": ' + args_text(seed, literal) + "}}")
    request: Any = types.jsonrpc_message_adapter.validate_json(line)
    params = types.CallToolRequestParams.model_validate(request.params)
    session = EpisodeSession(SCENARIO, seed)
    session.call(params.name, params.arguments)
    return session.env.world.events[0]


PATHS = {"python": by_python, "scripted": by_scripted_file, "cmd": by_process, "openai": by_model, "mcp": by_mcp}


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET")


@pytest.mark.usefixtures("api_key")
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("literal", LITERALS)
def test_every_path_gets_the_same_result(seed: int, literal: str, tmp_path: Path) -> None:
    """Regression: the same JSON text gets the same status and result on every path, and none rounds an amount."""
    results = {}
    for name, path in PATHS.items():
        (tmp_path / name).mkdir()
        done = path(seed, literal, tmp_path / name)
        assert done.tool == "quote_premium_change", (name, done)
        results[name] = (done.status, done.result)
    assert len({json.dumps(r, sort_keys=True) for r in results.values()}) == 1, results
    status, result = results["python"]
    value = ast.literal_eval(literal)
    if status == "ok":
        accepted = Decimal(result["new_annual_premium"])
        if isinstance(value, str):
            assert accepted == Decimal(value)
        else:  # the double the number denotes; with at most 15 significant digits, the number as written
            assert accepted == Decimal(repr(float(literal)))
            if len(Decimal(literal).normalize().as_tuple().digits) <= 15:
                assert accepted == Decimal(literal)
    if literal in ("500000000000000.01", "12345678901234.567"):
        assert status == "error" and "decimal string" in result["error"]
