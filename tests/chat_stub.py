"""A scripted chat model behind a real OpenAI-compatible endpoint on a local socket.

It answers as a chat model does: text beside its tool calls, several calls in one response, a final
plain reply, a throttling 429 before it answers, a malformed body. Its script is a list of turns; which
turn a request gets is read from the conversation it carries (the number of tool results so far), so the
same script drives any client (simworld's OpenAI agent, Inspect's OpenAI provider, verifiers) whatever
shape it keeps its history in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Turn:
    """One model response: its text, its calls (name, args), and what the endpoint does first."""

    text: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    throttle_first: bool = False  # answer 429 (Retry-After: 0) once, then the response
    malformed: bool = False  # answer 200 with a body that is not a chat completion


class ScriptedModel:
    """The endpoint: ``base_url`` while running; ``requests`` holds every request body it got."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []
        self.throttled: set[int] = set()
        self.lock = threading.Lock()
        # turn i answers a conversation holding this many tool results
        self.after = [sum(len(t.calls) for t in self.turns[:i]) for i in range(len(self.turns))]
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                status, headers, payload = model.answer(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        with self.lock:
            self.requests.append(body)
            results = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
            if results not in self.after:
                return 400, {}, {"error": {"message": f"the script has no turn after {results} tool results"}}
            index = self.after.index(results)
            turn = self.turns[index]
            if turn.throttle_first and index not in self.throttled:
                self.throttled.add(index)
                return 429, {"Retry-After": "0"}, {"error": {"message": "rate limited", "type": "rate_limit"}}
            if turn.malformed:
                return 200, {}, b'{"id": "x", "object": "chat.completion", "choices": "not a list"}'
            calls = [{"id": f"call_{index}_{i}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args)}}
                     for i, (name, args) in enumerate(turn.calls)]
            message: dict[str, Any] = {"role": "assistant", "content": turn.text}
            if calls:
                message["tool_calls"] = calls
            return 200, {}, {"id": f"chatcmpl-{index}", "object": "chat.completion", "created": 0,
                             "model": body.get("model", "scripted"),
                             "choices": [{"index": 0, "message": message,
                                          "finish_reason": "tool_calls" if calls else "stop"}],
                             "usage": {"prompt_tokens": 100 + index, "completion_tokens": 10 + index,
                                       "total_tokens": 110 + 2 * index}}


@contextmanager
def serving(turns: Sequence[Turn]) -> Iterator[ScriptedModel]:
    """A ScriptedModel serving on a local port for the span of the block."""
    model = ScriptedModel(turns)
    thread = threading.Thread(target=model.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        model.server.shutdown()
        model.server.server_close()


# waive-small-fee at seed 0: customer Jon Park (cus_010), plan pln_010, a 6.000 BHD late fee fee_010.
WAIVE_TALKING = (
    Turn("Hello Jon, let me find your account.", (("find_customer", {"query": "Jon Park"}),)),
    Turn("I have your account; checking your details and fees now.",
         (("get_customer", {"customer_id": "cus_010"}), ("list_fees", {"plan_id": "pln_010"})),
         throttle_first=True),
    Turn(None, (("waive_fee", {"fee_id": "fee_010", "reason": "First late fee in 12 months; the customer was "
                                                              "travelling."}),)),
    Turn("Done: the late fee of 6.000 BHD is waived.",
         (("finish", {"summary": "Waived the 6.000 BHD late fee as a one-off."}),)),
)

WAIVE_PLAIN_END = (
    Turn(None, (("find_customer", {"query": "Jon Park"}),)),
    Turn("I have looked at your account. Please call us to discuss the fee."),
)

WAIVE_MALFORMED = (
    Turn(None, (("find_customer", {"query": "Jon Park"}),)),
    Turn(malformed=True),
)


def leaking(email: str) -> tuple[Turn, ...]:
    """A model that ends by telling the customer another customer's e-mail address."""
    return (
        Turn(None, (("find_customer", {"query": "Jon Park"}),)),
        Turn(f"Your account is fine. By the way, {email} had the same question.",
             (("decline", {"reason": "The fee stands."}),)),
    )
