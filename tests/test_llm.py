"""The OpenAI-compatible model agent, against a local stub server replaying recorded chat completions."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import copy_suite

from simworld import llm
from simworld._agents.kinds import build_agent_factory
from simworld._agents.llm import LLMAPIError, LLMConfigError, LLMDependencyError, OpenAIAgent, openai_factory
from simworld._episode.contract import CONTRACT, system_text
from simworld._episode.environment import Environment
from simworld._episode.episode import Episode, Observation
from simworld._episode.play import AgentFactory
from simworld._episode.play import play as play_episode
from simworld._running.runner import run_one, run_suite
from simworld._scenario.scenario import load_suite
from simworld._world.clock import TimeGuard, wall_monotonic

FIXTURES = Path(__file__).parent / "fixtures" / "openai"
SID = "waive-small-fee"
SEED = 0  # at seed 0: customer "Jon Park" (cus_010), plan pln_010, late fee fee_010 of 6.000 BHD
KEY = "sk-test-SECRET"
WAIVE = ["waive-01-find_customer", "waive-02-list_fees", "waive-03-waive_fee", "waive-04-finish"]

# The test extra installs httpx: without it these tests must fail, not skip.
assert any(importlib.util.find_spec(m) for m in llm.HTTPX_MODULES), "install the test extra: pip install '.[test]'"


def fixture(name: str) -> dict[str, Any]:
    """A recorded response body."""
    return json.loads((FIXTURES / f"{name}.json").read_text())


class Stub:
    """A local OpenAI-compatible endpoint: replays scripted replies and records every request it gets.

    A reply may also be a stall (see :meth:`stall`): the request is accepted and never answered.
    """

    def __init__(self) -> None:
        self.replies: deque[tuple[int, dict[str, str], bytes] | str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()  # set at teardown: every stalled reply gives up
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                stub.requests.append({"path": self.path, "headers": dict(self.headers.items()), "raw": raw,
                                      "body": json.loads(raw)})
                reply = stub.replies.popleft() if stub.replies else None
                if isinstance(reply, str):
                    stub.stalled(self, reply)
                    return
                if reply is not None:
                    status, headers, body = reply
                else:
                    status, headers, body = 418, {}, b'{"error": {"message": "the stub has no reply left"}}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def reply(self, name: str, status: int = 200, headers: dict[str, str] | None = None) -> Stub:
        """Queue the fixture ``name`` as the next reply."""
        self.replies.append((status, headers or {}, (FIXTURES / f"{name}.json").read_bytes()))
        return self

    def raw_reply(self, body: dict[str, Any], status: int) -> Stub:
        """Queue a reply built in the test."""
        self.replies.append((status, {}, json.dumps(body).encode()))
        return self

    def stall(self, mode: str) -> Stub:
        """Queue a reply that never completes: ``silent`` reads the request and says nothing; ``trickle`` sends
        the headers of a 100 kB body, then one byte every 0.1 s (so no single read ever times out)."""
        self.replies.append(mode)
        return self

    def stalled(self, handler: BaseHTTPRequestHandler, mode: str) -> None:
        handler.close_connection = True
        if mode == "trickle":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", "100000")
            handler.end_headers()
            while not self.release.wait(0.1):
                try:
                    handler.wfile.write(b" ")  # JSON allows leading whitespace: the body is never wrong, only slow
                except OSError:  # the client gave up
                    return
        else:
            self.release.wait(120)


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    s.thread.start()
    yield s
    s.release.set()
    s.server.shutdown()
    s.server.server_close()


@pytest.fixture(scope="module")
def scenario():
    (sc,) = load_suite(None, [SID])
    return sc


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    """The waits the agent asked for between retries (it still waits them)."""
    waited: list[float] = []
    real = llm._sleep

    def record(seconds: float) -> None:
        waited.append(seconds)
        real(seconds)

    monkeypatch.setattr(llm, "_sleep", record)
    return waited


@pytest.fixture(autouse=True)
def api_key(monkeypatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return KEY


def play(scenario, stub: Stub, **kwargs: Any) -> tuple[Any, dict[str, Any], list[OpenAIAgent]]:
    """Run the scenario at SEED with a stub-backed agent; also return the agents built."""
    agents: list[OpenAIAgent] = []

    def build() -> OpenAIAgent:
        options = {"backoff_s": 0.01, "jitter": 0.0, **kwargs}  # no jitter: the waits are exact
        agents.append(OpenAIAgent("stub-model", base_url=stub.base_url, **options))
        return agents[-1]

    episode, result = run_one(scenario, SEED, build)
    return episode, result, agents


def dump(episode: Any, result: dict[str, Any]) -> str:
    """Everything the episode and its result hold, as text."""
    events = [e.to_json() for e in episode.events]
    return json.dumps([events, result, episode.error, dict(episode.counters)], default=str)


class TestPlaysWaiveSmallFee:
    def test_episode_passes(self, scenario, stub: Stub) -> None:
        """The model loop plays find_customer, list_fees, waive_fee, finish and the episode passes."""
        for name in WAIVE:
            stub.reply(name)
        episode, result, _ = play(scenario, stub)
        assert [(e.tool, e.status) for e in episode.events] == [
            ("find_customer", "ok"), ("list_fees", "ok"), ("waive_fee", "ok"), ("finish", "ok")]
        assert episode.events[0].args == {"query": "Jon Park"}
        assert episode.events[1].args == {"plan_id": "pln_010"}
        assert episode.events[2].args["fee_id"] == "fee_010"
        assert result["passed"] and result["total"] == 1.0, result["checks"]
        assert (result["outcome"], result["stop_reason"], result["error"]) == ("act", "terminal", None)
        assert len(stub.requests) == 4 and all(r["path"] == "/v1/chat/completions" for r in stub.requests)


class TestTokenCounters:
    def test_counters_are_the_fixture_sums(self, scenario, stub: Stub) -> None:
        """input_tokens, output_tokens and total_tokens are the sums of the responses' usage."""
        for name in WAIVE:
            stub.reply(name)
        _, result, _ = play(scenario, stub)
        prompt = sum(fixture(n)["usage"]["prompt_tokens"] for n in WAIVE)
        completion = sum(fixture(n)["usage"]["completion_tokens"] for n in WAIVE)
        counters = result["counters"]
        assert (counters["input_tokens"], counters["output_tokens"]) == (prompt, completion)
        assert counters["total_tokens"] == prompt + completion == sum(fixture(n)["usage"]["total_tokens"]
                                                                      for n in WAIVE)

    def test_usage_counted_once_per_response(self, scenario, stub: Stub) -> None:
        """A response with two tool calls counts its usage once, on the first action made from it."""
        names = ["waive-01-find_customer", "waive-02-list_fees", "parallel-03-get_customer-list_payments",
                 "waive-03-waive_fee", "waive-04-finish"]
        for name in names:
            stub.reply(name)
        _, result, _ = play(scenario, stub)
        assert result["counters"]["input_tokens"] == sum(fixture(n)["usage"]["prompt_tokens"] for n in names)
        assert result["counters"]["output_tokens"] == sum(fixture(n)["usage"]["completion_tokens"] for n in names)


class TestParallelToolCalls:
    def test_queued_calls_played_and_answered_in_order(self, scenario, stub: Stub) -> None:
        """Two tool calls in one response run one per act(), in order, each answered before the next request."""
        for name in ["waive-01-find_customer", "waive-02-list_fees", "parallel-03-get_customer-list_payments",
                     "waive-03-waive_fee", "waive-04-finish"]:
            stub.reply(name)
        episode, result, _ = play(scenario, stub)
        assert [e.tool for e in episode.events] == ["find_customer", "list_fees", "get_customer", "list_payments",
                                                   "waive_fee", "finish"]
        assert result["passed"], result["checks"]
        assert len(stub.requests) == 5  # the queued list_payments needed no request
        messages = stub.requests[3]["body"]["messages"]
        ids = [c["id"] for c in fixture("parallel-03-get_customer-list_payments")["choices"][0]["message"]
               ["tool_calls"]]
        # One assistant message a call, each answered before the next: the shape an export writes.
        assert [(m["role"], [c["id"] for c in m.get("tool_calls", ())] or m.get("tool_call_id"))
                for m in messages[-4:]] == [("assistant", [ids[0]]), ("tool", ids[0]), ("assistant", [ids[1]]),
                                            ("tool", ids[1])]
        assert json.loads(messages[-3]["content"]) == episode.events[2].result
        assert json.loads(messages[-1]["content"]) == episode.events[3].result


class TestPlainAnswerStops:
    def test_no_tool_call_stops(self, scenario, stub: Stub) -> None:
        """A reply with no tool call is the model's last word: recorded as a say event, then the episode ends as
        agent_stopped, with no outcome."""
        stub.reply("plain-answer")
        episode, result, _ = play(scenario, stub)
        text = fixture("plain-answer")["choices"][0]["message"]["content"]
        assert [(e.kind, e.args) for e in episode.events] == [("say", {"text": text})]
        assert result["stop_reason"] == "agent_stopped" and result["outcome"] is None and result["error"] is None

    def test_final_reply_tokens_are_counted(self, scenario, stub: Stub) -> None:
        """The tokens of the reply that ends the episode without a tool call still reach the counters."""
        stub.reply("plain-answer")
        _, result, _ = play(scenario, stub)
        usage = fixture("plain-answer")["usage"]
        assert result["counters"]["input_tokens"] == usage["prompt_tokens"]
        assert result["counters"]["output_tokens"] == usage["completion_tokens"]
        assert result["counters"]["steps"] == 0


class TestRetries:
    def test_408_then_success(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """A 408 (request timeout) is retried like a 429."""
        stub.reply("error-429", 408)
        for name in WAIVE:
            stub.reply(name)
        _, result, agents = play(scenario, stub)
        assert result["passed"] and agents[0].retries == 1

    def test_429_then_success(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """A 429 is retried after the backoff and the episode goes on."""
        stub.reply("error-429", 429)
        for name in WAIVE:
            stub.reply(name)
        _, result, agents = play(scenario, stub)
        assert result["passed"] and len(stub.requests) == 5
        assert stub.requests[0]["raw"] == stub.requests[1]["raw"]  # the same request, sent again
        assert sleeps == [0.01] and agents[0].retries == 1

    def test_500_then_success(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """A 500 (twice) is retried with exponential backoff and the episode goes on."""
        stub.reply("waive-01-find_customer").reply("error-500", 500).reply("error-500", 500)
        for name in WAIVE[1:]:
            stub.reply(name)
        _, result, agents = play(scenario, stub)
        assert result["passed"] and len(stub.requests) == 6
        assert sleeps == [0.01, 0.02] and agents[0].retries == 2

    def test_retry_after_is_honoured(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """Retry-After (seconds) and retry-after-ms replace the computed backoff."""
        stub.reply("error-429", 429, {"Retry-After": "0.03"}).reply("error-500", 503, {"retry-after-ms": "15"})
        for name in WAIVE:
            stub.reply(name)
        _, result, _ = play(scenario, stub)
        assert result["passed"] and sleeps == [0.03, 0.015]

    def test_backoff_has_jitter(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """With jitter (the default, 0.5), each wait lies between half and all of the exponential backoff."""
        for _ in range(4):
            stub.reply("error-500", 500)
        play(scenario, stub, max_retries=3, jitter=0.5)
        assert len(sleeps) == 3
        for attempt, wait in enumerate(sleeps):
            assert 0.005 * 2**attempt <= wait <= 0.01 * 2**attempt

    def test_retry_after_gets_jitter_on_top(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """A Retry-After is waited at least in full, plus up to jitter x the base backoff."""
        stub.reply("error-429", 429, {"Retry-After": "0.03"})
        for name in WAIVE:
            stub.reply(name)
        play(scenario, stub, jitter=1.0)
        assert len(sleeps) == 1 and 0.03 <= sleeps[0] <= 0.04

    def test_bad_jitter_refused(self) -> None:
        """jitter must lie in [0, 1]; the message shows the value and its type."""
        with pytest.raises(LLMConfigError, match=r"jitter=2 \(type=int\)"):
            OpenAIAgent("stub-model", "http://127.0.0.1:9/v1", jitter=2)

    def test_gives_up_after_max_retries(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """After max_retries failures the error is raised and the episode is recorded as errored."""
        for _ in range(3):
            stub.reply("error-500", 500)
        episode, result, _ = play(scenario, stub, max_retries=2)
        assert len(stub.requests) == 3 and sleeps == [0.01, 0.02]
        assert result["stop_reason"] == "agent_error"
        assert "HTTP 500" in result["error"] and "gave up after 2 retries" in result["error"]

    def test_connection_error_retried(self, scenario, sleeps: list[float]) -> None:
        """A server that cannot be reached is retried, then reported."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed again at once: nothing listens there
        _, result = run_one(scenario, SEED, lambda: OpenAIAgent("stub-model", f"http://127.0.0.1:{port}/v1",
                                                                max_retries=2, backoff_s=0.01, jitter=0.0))
        assert sleeps == [0.01, 0.02]
        assert result["stop_reason"] == "agent_error" and "could not reach the server" in result["error"]


class TestClientError:
    def test_400_raises_at_once(self, scenario, stub: Stub, sleeps: list[float]) -> None:
        """A 400 is not retried: the episode is errored with the status and the server's message, never the key."""
        stub.reply("error-400", 400)
        episode, result, _ = play(scenario, stub)
        assert len(stub.requests) == 1 and sleeps == []
        assert result["stop_reason"] == episode.stop_reason == "agent_error"
        assert "LLMAPIError" in result["error"] and "HTTP 400" in result["error"]
        assert fixture("error-400")["error"]["message"] in result["error"]
        assert KEY not in dump(episode, result)

    def test_echoed_key_is_scrubbed(self, scenario, stub: Stub) -> None:
        """A server that echoes the key in its error body does not get it into the episode's error."""
        stub.raw_reply({"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "invalid_request_error",
                                  "code": "invalid_api_key"}}, 401)
        episode, result, _ = play(scenario, stub)
        assert "HTTP 401" in result["error"] and "[redacted]" in result["error"]
        assert KEY not in dump(episode, result)


class TestApiKey:
    def test_key_only_in_authorization_header(self, scenario, stub: Stub, caplog) -> None:
        """The key reaches the server only as the Authorization header and is nowhere in the episode or the log."""
        stub.reply("error-500", 500)
        for name in WAIVE:
            stub.reply(name)
        with caplog.at_level("DEBUG"):
            episode, result, agents = play(scenario, stub)
        assert result["passed"]
        for request in stub.requests:
            assert request["headers"]["Authorization"] == f"Bearer {KEY}"
            others = {k: v for k, v in request["headers"].items() if k.lower() != "authorization"}
            assert KEY not in json.dumps(others) and KEY.encode() not in request["raw"] and KEY not in request["path"]
        assert KEY not in dump(episode, result)
        assert KEY not in caplog.text and KEY not in repr(agents[0])

    def test_missing_key_for_openai_names_the_variable(self, monkeypatch) -> None:
        """Without the variable, the default OpenAI endpoint is refused with the variable's name."""
        monkeypatch.delenv("OPENAI_API_KEY")
        with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
            OpenAIAgent("gpt-4o")
        monkeypatch.setenv("MY_KEY", "")
        with pytest.raises(LLMConfigError, match="MY_KEY"):
            OpenAIAgent("gpt-4o", "https://api.openai.com/v1/", api_key_env="MY_KEY")

    def test_base_url_from_environment(self, monkeypatch) -> None:
        """Without base_url, OPENAI_BASE_URL names the endpoint, as in the official clients; base_url wins."""
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
        assert OpenAIAgent("m").base_url == "http://127.0.0.1:9/v1"
        assert OpenAIAgent("m", "http://127.0.0.1:8/v1").base_url == "http://127.0.0.1:8/v1"

    def test_missing_key_allowed_for_custom_base_url(self, scenario, stub: Stub, monkeypatch) -> None:
        """A local server needs no key: no Authorization header is sent."""
        monkeypatch.delenv("OPENAI_API_KEY")
        for name in WAIVE:
            stub.reply(name)
        _, result, _ = play(scenario, stub)
        assert result["passed"]
        assert all("authorization" not in {k.lower() for k in r["headers"]} for r in stub.requests)

    def test_key_from_named_variable(self, scenario, stub: Stub, monkeypatch) -> None:
        """api_key_env names the variable the key is read from."""
        monkeypatch.setenv("LOCAL_LLM_KEY", "local-key")
        stub.reply("plain-answer")
        play(scenario, stub, api_key_env="LOCAL_LLM_KEY")
        assert stub.requests[0]["headers"]["Authorization"] == "Bearer local-key"


class TestRequestShape:
    def test_messages_and_tools(self, scenario, stub: Stub) -> None:
        """Requests carry the model, temperature 0, the tools as functions and system/user/assistant/tool messages."""
        for name in WAIVE:
            stub.reply(name)
        episode, _, _ = play(scenario, stub)
        body = stub.requests[3]["body"]
        assert body["model"] == "stub-model" and body["temperature"] == 0 and "seed" not in body
        assert [t["type"] for t in body["tools"]] == ["function"] * len(scenario.tools)
        assert [t["function"]["name"] for t in body["tools"]] == list(scenario.tools)
        assert set(body["tools"][0]["function"]) == {"name", "description", "parameters"}
        messages = body["messages"]
        assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "tool"] * 3
        assert messages[0]["content"] == system_text(episode.policy_text) and messages[1]["content"] == episode.request
        assert messages[0]["content"].startswith(CONTRACT) and messages[0]["content"].endswith(episode.policy_text)
        for i, name in enumerate(WAIVE[:3]):
            assistant, tool = messages[2 + 2 * i], messages[3 + 2 * i]
            recorded = fixture(name)["choices"][0]["message"]["tool_calls"][0]
            assert assistant["tool_calls"] == [{"id": recorded["id"], "type": "function",
                                                "function": recorded["function"]}]
            assert tool["tool_call_id"] == recorded["id"]
            assert json.loads(tool["content"]) == episode.events[i].result
        assert [len(r["body"]["messages"]) for r in stub.requests] == [2, 4, 6, 8]

    def test_seed_passed_through(self, scenario, stub: Stub) -> None:
        """A seed given to the constructor is sent with every request."""
        stub.reply("plain-answer")
        play(scenario, stub, seed=1234)
        assert stub.requests[0]["body"]["seed"] == 1234 and stub.requests[0]["body"]["temperature"] == 0

    def test_error_result_is_answered_with_status(self, scenario, stub: Stub) -> None:
        """A call the world refuses is answered with its status and error, and the model can go on."""
        bad = fixture("waive-02-list_fees")
        bad["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"plan_id": "pln_999"}'
        stub.reply("waive-01-find_customer").raw_reply(bad, 200).reply("plain-answer")
        episode, _, _ = play(scenario, stub)
        assert episode.events[1].status == "error"
        answer = json.loads(stub.requests[2]["body"]["messages"][-1]["content"])
        assert answer["status"] == "error" and "pln_999" in answer["error"]


class TestResume:
    def test_conversation_rebuilt_from_history(self, stub: Stub) -> None:
        """A resumed agent sends the session log as assistant tool calls and tool results."""
        history = ({"seq": 0, "tool": "find_customer", "args": {"query": "Jon Park"}, "status": "ok",
                    "result": {"customers": [{"id": "cus_010"}]}},
                   {"seq": 1, "tool": "waive_fee", "args": {"fee_id": "fee_999", "reason": "x"}, "status": "error",
                    "result": {"error": "No fee with fee_id='fee_999'"}})
        obs = Observation("REQUEST", "POLICY", ({"name": "finish", "description": "d", "parameters": {}},), 2,
                          "2024-04-20T14:00:00.000Z", resumed=True, history=history)
        stub.reply("waive-04-finish")
        action = OpenAIAgent("stub-model", stub.base_url).act(obs)
        assert action is not None and action["tool"] == "finish"
        messages = stub.requests[0]["body"]["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]
        assert messages[2]["tool_calls"][0]["function"] == {"name": "find_customer",
                                                            "arguments": '{"query":"Jon Park"}'}
        assert messages[3] == {"role": "tool", "tool_call_id": messages[2]["tool_calls"][0]["id"],
                               "content": '{"customers":[{"id":"cus_010"}]}'}
        assert json.loads(messages[5]["content"])["status"] == "error"


class TestUnderTheHarness:
    def test_run_suite_with_freezegun(self, scenario, stub: Stub) -> None:
        """run_suite (which starts freezegun) drives the agent like any other."""
        for name in WAIVE:
            stub.reply(name)
        factory: AgentFactory = lambda sc, seed, v: OpenAIAgent("stub-model", stub.base_url)  # noqa: E731
        run = run_suite([scenario], [SEED], "openai:stub-model", factory, None)
        assert run.results[0]["passed"] and run.results[0]["counters"]["input_tokens"] > 0


class TestFactory:
    def test_fresh_agent_per_episode_and_early_failure(self, scenario, stub: Stub, monkeypatch) -> None:
        """openai_factory checks the configuration at once and builds a fresh agent for every episode."""
        factory = openai_factory("stub-model", stub.base_url, seed=7)
        a, b = factory(scenario, 0, {}), factory(scenario, 1, {})
        assert isinstance(a, OpenAIAgent) and a is not b and (a.seed, a.base_url) == (7, stub.base_url)
        monkeypatch.delenv("OPENAI_API_KEY")
        with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
            openai_factory("gpt-4o")


class TestMissingDependency:
    def test_clear_error_without_httpx(self, monkeypatch) -> None:
        """Without httpx (or httpx2) the agent cannot be built and says how to install it."""
        for name in llm.HTTPX_MODULES:
            monkeypatch.setitem(sys.modules, name, None)
        with pytest.raises(LLMDependencyError) as caught:
            OpenAIAgent("gpt-4o", "http://localhost:8000/v1")
        assert str(caught.value) == ("--agent openai:MODEL requires the optional dependency httpx. "
                                     "Install with: pip install 'simworld[openai]'")
        assert isinstance(caught.value, ImportError)


class TestConfig:
    def test_bad_base_url(self) -> None:
        """A base URL that is not http(s) is refused when the agent is built."""
        with pytest.raises(LLMConfigError, match="--base-url"):
            OpenAIAgent("m", "localhost:8000/v1")

    def test_errors_are_simworld_errors(self) -> None:
        """Every error the agent raises is a SimworldError, so the CLI prints it cleanly."""
        from simworld.errors import SimworldError

        assert issubclass(LLMAPIError, SimworldError) and issubclass(LLMConfigError, SimworldError)
        assert LLMAPIError("x", 400).status == 400

    def test_episode_timeout_must_be_positive(self) -> None:
        """episode_timeout_s of zero or less is refused when the agent is built."""
        with pytest.raises(LLMConfigError, match="episode_timeout_s"):
            OpenAIAgent("m", "http://localhost:8000/v1", episode_timeout_s=0)


QUICK_S = 2  # the copied scenario's timeout_s


@pytest.fixture
def quick(tmp_path: Path):
    """SID with a 2 s budget, so a stalled endpoint is cut off quickly."""
    (sc,) = load_suite(copy_suite(tmp_path, SID, budget={"max_steps": 15, "timeout_s": QUICK_S}), [SID])
    return sc


def play_alone(scenario, factory: AgentFactory) -> tuple[Episode, float]:
    """Play one episode with no watchdog thread (the factory is not marked bounded) under freezegun.

    Only the agent's own deadline can end a stalled request; a harness that hangs fails the test.
    """
    box: list[Episode] = []

    def run() -> None:
        with TimeGuard() as guard:
            box.append(play_episode(Environment(scenario, SEED, agent_name="openai", guard=guard), factory))

    began = wall_monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(QUICK_S + 30)
    assert not worker.is_alive(), "the agent waited on the endpoint past the episode's timeout"
    return box[0], wall_monotonic() - began


class TestEpisodeDeadline:
    def test_factory_gives_each_agent_the_scenario_timeout(self, quick, stub: Stub) -> None:
        """openai_factory's agents know their scenario's timeout_s; a bare OpenAIAgent has no deadline."""
        agent = openai_factory("stub-model", stub.base_url)(quick, SEED, {})
        assert isinstance(agent, OpenAIAgent) and agent.episode_timeout_s == QUICK_S
        assert agent.deadline is not None and 0 < agent.deadline - wall_monotonic() <= QUICK_S
        assert OpenAIAgent("stub-model", stub.base_url).deadline is None

    def test_factory_agents_still_play(self, scenario, stub: Stub) -> None:
        """With a deadline (the streamed request) the agent plays and passes exactly as before."""
        for name in WAIVE:
            stub.reply(name)
        factory = openai_factory("stub-model", stub.base_url)
        episode, _ = play_alone(scenario, factory)
        assert (episode.stop_reason, episode.outcome, episode.error) == ("terminal", "act", None)

    def test_silent_endpoint_is_a_timeout(self, quick, stub: Stub) -> None:
        """An endpoint that accepts the request and never answers ends the episode as timeout, by the agent's own
        deadline (no watchdog here), within timeout_s and a few seconds."""
        stub.stall("silent")
        episode, took = play_alone(quick, openai_factory("stub-model", stub.base_url, backoff_s=0.01))
        assert episode.stop_reason == "timeout", episode.error
        assert f"gave no complete answer within the episode's {QUICK_S} s timeout" in (episode.error or "")
        assert took < QUICK_S + 10 and len(stub.requests) == 1

    def test_trickling_endpoint_is_a_timeout(self, quick, stub: Stub) -> None:
        """An endpoint that trickles its body a byte at a time (no read ever times out) still ends on time."""
        stub.stall("trickle")
        episode, took = play_alone(quick, openai_factory("stub-model", stub.base_url, backoff_s=0.01))
        assert episode.stop_reason == "timeout", episode.error
        assert "gave no complete answer" in (episode.error or "") and took < QUICK_S + 10

    def test_backoff_never_sleeps_past_the_deadline(self, quick, stub: Stub, sleeps: list[float]) -> None:
        """A Retry-After longer than the time left ends the episode as timeout at once, without sleeping."""
        stub.reply("error-429", 429, {"Retry-After": "30"})
        episode, took = play_alone(quick, openai_factory("stub-model", stub.base_url))
        assert episode.stop_reason == "timeout" and "leaves no time to retry" in (episode.error or "")
        assert sleeps == [] and took < QUICK_S + 10
        assert KEY not in (episode.error or "")

    def test_run_goes_on_after_a_stall(self, quick, stub: Stub) -> None:
        """Under simworld run's own factory (watchdog and all), a stalled episode is a timeout and the next
        episode of the run plays normally."""
        stub.stall("silent")
        for name in WAIVE:
            stub.reply(name)
        factory = build_agent_factory("openai:stub-model", base_url=stub.base_url)
        began = wall_monotonic()
        run = run_suite([quick], [SEED], "openai:stub-model", factory, None, trials=2)
        first, second = run.results
        assert first["stop_reason"] == "timeout" and not first["passed"]
        assert (second["stop_reason"], second["passed"]) == ("terminal", True), second["error"]
        assert wall_monotonic() - began < QUICK_S + 15
