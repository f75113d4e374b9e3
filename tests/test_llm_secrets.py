"""No API key or URL credential, in any form, reaches anything a model agent's run writes or prints."""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import simworld

from simworld._agents.llm import LLMAPIError, LLMConfigError, OpenAIAgent
from simworld._agents.redact import MARKER, MIN_BARE, Redactor, secret_forms

KEY = "sk-test-SECRET123456"
USER = "alice"
PASSWORD_IN_URL = "pa%24%24w0rd%40xyz"  # percent-encoded in the URL ...
PASSWORD = "pa$$w0rd@xyz"  # ... and as httpx decodes and sends it
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()  # what httpx sends for the URL's credentials
SID = "waive-small-fee"


def b64_forms(text: str) -> list[str]:
    """base64 of ``text`` in both alphabets, with and without padding."""
    both = [base64.b64encode(text.encode()).decode(), base64.urlsafe_b64encode(text.encode()).decode()]
    return both + [b.rstrip("=") for b in both]


def key_forms() -> list[str]:
    return [KEY, f"Bearer {KEY}", *b64_forms(KEY)]


def credential_forms() -> list[str]:
    return [PASSWORD, PASSWORD_IN_URL, f"{USER}:{PASSWORD}", f"{USER}:{PASSWORD_IN_URL}", f"Basic {BASIC}",
            *b64_forms(f"{USER}:{PASSWORD}")]


class TestRedactor:
    def test_every_form_of_the_key(self) -> None:
        """The key, its Bearer header and its base64 (both alphabets, padded or not) are each cut."""
        scrub = Redactor(KEY)
        for form in key_forms():
            out = scrub(f"echo <{form}> end")
            assert KEY not in out and not any(f in out for f in b64_forms(KEY)), form
            assert MARKER in out and out.startswith("echo <") and out.endswith("> end")

    def test_every_form_of_url_credentials(self) -> None:
        """The password (encoded and decoded), user:password and the Basic value in every base64 form are cut."""
        scrub = Redactor(None, f"http://{USER}:{PASSWORD_IN_URL}@127.0.0.1:9/v1")
        for form in credential_forms():
            out = scrub(f"x {form} y")
            assert not any(f in out for f in credential_forms()), (form, out)
            assert MARKER in out, form
        assert scrub(f"user {USER} here") == f"user {USER} here"  # the user name alone is no secret

    def test_json_escaped_forms(self) -> None:
        """A secret holding characters JSON escapes is cut from JSON text too."""
        scrub = Redactor('sk-"quoted"\\key-123')
        assert scrub(json.dumps({"a": 'sk-"quoted"\\key-123'})) == json.dumps({"a": MARKER})

    def test_user_alone_is_the_credential(self) -> None:
        """http://TOKEN@host: the token (and base64 of ``TOKEN:``, as httpx sends it) is cut."""
        scrub = Redactor(None, "http://tok-ABCDEFGH12@h/v1")
        basic = base64.b64encode(b"tok-ABCDEFGH12:").decode()
        assert scrub(f"tok-ABCDEFGH12 Basic {basic}") == f"{MARKER} Basic {MARKER}"

    def test_short_secret_only_as_a_header_value(self) -> None:
        """A 1-char password and a dummy key are cut as header values, never out of normal text."""
        scrub = Redactor("none", "http://u:p@h/v1")
        basic = base64.b64encode(b"u:p").decode()
        text = "none of the plan's payments; Bearer none; Basic " + basic + "; Basic px"
        assert scrub(text) == f"none of the plan's payments; Bearer {MARKER}; Basic {MARKER}; Basic px"
        assert "none" in secret_forms("none") and len("none") < MIN_BARE

    def test_recursive_over_values_and_keys(self) -> None:
        """Strings and dict keys are cut at any depth; numbers, booleans and None are kept; order is kept."""
        scrub = Redactor(KEY)
        value = {"b": [1, 2.5, True, None, {KEY: f"Bearer {KEY}"}], "a": (KEY,), KEY: "x"}
        assert scrub(value) == {"b": [1, 2.5, True, None, {MARKER: f"Bearer {MARKER}"}], "a": [MARKER], MARKER: "x"}
        assert list(scrub(value)) == ["b", "a", MARKER]

    def test_deep_nesting_does_not_raise(self) -> None:
        """The walk is iterative: nesting far past the recursion limit is scrubbed, not a RecursionError."""
        deep: Any = KEY
        for _ in range(sys.getrecursionlimit() * 3):
            deep = [deep]
        out = Redactor(KEY)(deep)
        for _ in range(sys.getrecursionlimit() * 3):
            out = out[0]
        assert out == MARKER

    def test_no_secret_no_work(self) -> None:
        """Without a key or credentials the value itself comes back, and the redactor is falsy."""
        value = {"a": ["b"]}
        for scrub in (Redactor(), Redactor("", "http://h/v1"), Redactor(None, "http://@h/v1")):
            assert not scrub and scrub(value) is value


class TestAgentScrubs:
    def test_escaped_secret_in_arguments(self) -> None:
        """Arguments that spell the key with JSON escapes are cut after parsing too."""
        agent = OpenAIAgent("m", "http://127.0.0.1:9/v1", api_key_env="SW_TEST_KEY")
        agent._redactor = Redactor(KEY)
        escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
        calls = agent._tool_calls({"tool_calls": [{"id": "c", "function": {"name": "f",
                                                                          "arguments": f'{{"q": "{escaped}"}}'}}]})
        assert calls[0]["args"] == {"q": MARKER}

    def test_any_exception_is_scrubbed(self, monkeypatch) -> None:
        """An error raised from deep inside (an httpx error naming the URL, say) leaves act() scrubbed."""
        monkeypatch.setenv("SW_TEST_KEY", KEY)
        agent = OpenAIAgent("m", f"http://{USER}:{PASSWORD_IN_URL}@127.0.0.1:9/v1", api_key_env="SW_TEST_KEY")

        def fail(observation: Any) -> None:
            raise ValueError(f"bad URL http://{USER}:{PASSWORD_IN_URL}@127.0.0.1:9/v1 with {KEY}")

        monkeypatch.setattr(agent, "_act", fail)
        with pytest.raises(LLMAPIError) as caught:
            agent.act(None)  # type: ignore[arg-type]
        assert str(caught.value) == f"ValueError: bad URL http://{MARKER}@127.0.0.1:9/v1 with {MARKER}"

    def test_malformed_url_error_shows_no_credentials(self) -> None:
        """A base URL refused as malformed is shown without what precedes its @."""
        with pytest.raises(LLMConfigError) as caught:
            OpenAIAgent("m", f"{USER}:{PASSWORD_IN_URL}@127.0.0.1:9/v1")
        assert PASSWORD_IN_URL not in str(caught.value) and "***@127.0.0.1:9/v1" in str(caught.value)


class EchoServer:
    """An OpenAI-compatible endpoint that echoes the request's Authorization header (and ``forms``) back.

    First a 500 whose error message holds the header (the agent retries, logging a warning), then two
    tool calls whose name, arguments (values and keys) and text hold it, then a 400 holding it again.
    """

    def __init__(self, forms: list[str]) -> None:
        replies: list[Callable[[str], tuple[int, dict[str, Any]]]] = [
            lambda auth: (500, {"error": {"message": f"overloaded; you sent {auth}", "type": "server_error"}}),
            lambda auth: (200, self.tool_calls(auth, forms)),
            lambda auth: (400, {"error": {"message": f"bad request from {auth}: {' '.join(forms)}",
                                          "type": "invalid_request_error"}}),
        ]
        self.seen: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                auth = self.headers.get("Authorization", "")
                server.seen.append(auth)
                status, body = replies.pop(0)(auth) if replies else (418, {"error": {"message": "no reply left"}})
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    @staticmethod
    def tool_calls(auth: str, forms: list[str]) -> dict[str, Any]:
        args = {"query": auth, auth: [auth, {"forms": forms}]}
        message = {"role": "assistant", "content": f"Looking up {auth}",
                   "tool_calls": [{"id": "call_1", "type": "function",
                                   "function": {"name": "find_customer", "arguments": json.dumps(args)}},
                                  {"id": "call_2", "type": "function",
                                   "function": {"name": f"lookup {auth}", "arguments": "{}"}}]}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


@pytest.fixture
def echo_server() -> Iterator[Callable[[list[str]], EchoServer]]:
    made: list[EchoServer] = []

    def make(forms: list[str]) -> EchoServer:
        made.append(EchoServer(forms))
        return made[-1]

    yield make
    for server in made:
        server.httpd.shutdown()
        server.httpd.server_close()


class TestNoSecretInAnyOutput:
    @pytest.mark.parametrize("credentials", [False, True], ids=["bearer-key", "basic-url-credentials"])
    def test_run_export_report(self, credentials: bool, tmp_path: Path, monkeypatch,
                               echo_server: Callable[[list[str]], EchoServer]) -> None:
        """An endpoint echoing the Authorization header (Bearer key, or Basic from URL credentials) and every
        encoding of the secrets leaves none in the run directory, the exports, the report or the output."""
        needles = key_forms() + (credential_forms() if credentials else [])
        server = echo_server(needles)
        userinfo = f"{USER}:{PASSWORD_IN_URL}@" if credentials else ""
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        out = tmp_path / "run"
        outputs: list[str] = []
        done = simworld("run", "--scenario", SID, "--seed", "0", "--agent", "openai:stub", "--max-retries", "1",
                        "--base-url", f"http://{userinfo}127.0.0.1:{server.port}/v1", "--out", str(out))
        outputs += [done.stdout, done.stderr]
        assert done.returncode == 1, done.stderr
        # The secret really went out, and really came back: the test would fail without scrubbing.
        assert server.seen == [f"Basic {BASIC}" if credentials else f"Bearer {KEY}"] * 3
        assert MARKER in done.stderr  # the retry warning quoted the 500's echo

        results = json.loads((out / "results.jsonl").read_text())
        assert results["stop_reason"] == "agent_error" and "HTTP 400" in results["error"]
        assert MARKER in results["error"]
        events = (out / "events" / f"{SID}__seed-0.jsonl").read_text()
        assert events.count(MARKER) >= 4  # the query, the key, the list in it, the tool name

        files = [p for p in out.rglob("*") if p.is_file()]
        for fmt in ("native", "openai", "trl"):
            exported = tmp_path / f"export.{fmt}.jsonl"
            done = simworld("export", str(out), "--format", fmt, "--out", str(exported))
            assert done.returncode == 0, done.stderr
            assert MARKER in exported.read_text(), fmt
            files.append(exported)
            outputs += [done.stdout, done.stderr]
        html = tmp_path / "report.html"
        for args in ((), ("--json",), ("--html", str(html))):
            done = simworld("report", str(out), *args)
            assert done.returncode == 0, done.stderr
            outputs += [done.stdout, done.stderr]
        files.append(html)

        texts = {str(p): p.read_text(encoding="utf-8") for p in files}
        texts.update({f"output {i}": text for i, text in enumerate(outputs)})
        for where, text in texts.items():
            for needle in needles:
                assert needle not in text, (where, needle)
