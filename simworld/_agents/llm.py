"""An agent driven by a model behind any OpenAI-compatible chat completions endpoint.

``OpenAIAgent(model, base_url)`` POSTs ``{base_url}/chat/completions`` with the
conversation so far and the episode's tools, and turns the model's tool calls into
actions, one per ``act()``:

- messages: system = the conversation's rules and the policy, user = the request, then
  for every call an ``assistant`` message with the call and a ``tool`` message
  (``tool_call_id``, content = the JSON text of the result, or of the error);
- several tool calls in one response are played in order, one per ``act()``, each
  answered before the next request; the conversation keeps them as one assistant message
  a call (the response's text on the first), the shape :func:`simworld._agents.chat.conversation`
  gives an export, so the model is shown what a training line holds;
- the text a model writes beside its calls rides on the first call's action as ``say`` and
  is recorded as the episode's ``say`` event; a reply with no tool call is the model's last
  word: recorded the same way, then the episode stops (``agent_stopped``, no outcome), as the
  system message's rules tell the model (:mod:`simworld._episode.contract`);
- a resumed agent (after a crash) rebuilds the conversation from the session log;
- each response's ``usage`` rides on the first action made from it, so the episode's
  token counters count it once;
- 408, 409, 429, 5xx and connection errors are retried with exponential backoff, up to
  ``max_retries``; any other error status raises at once. Each wait is jittered (drawn
  between ``1 - jitter`` and 1 times the backoff) so that many episodes throttled at once
  do not retry in lockstep; a ``Retry-After`` is honoured, plus up to ``jitter`` times the
  base backoff. The jitter changes only wall-clock waits, never a result;
- with ``episode_timeout_s`` (``openai_factory`` passes the scenario's ``timeout_s``) the
  agent keeps to the episode's deadline itself, counted from its construction: no request
  may wait, and no backoff may sleep, past it, and a response still arriving when it
  passes is dropped; it then raises :class:`~simworld.errors.AgentTimeout`, so the
  episode ends as ``timeout``. The runner's watchdog stays the backstop, and a call it
  abandons this way still ends on time instead of holding a socket open;
- requests are deterministic where the server allows: temperature 0 and, if given,
  ``seed``.

The endpoint is ``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's, as the official
clients do. The API key is read from ``api_key_env`` (``OPENAI_API_KEY``) and sent only in the
``Authorization`` header (``Bearer KEY``; credentials in the URL, ``http://user:password@host``,
are sent by httpx as ``Basic base64(user:password)`` instead). Neither is ever logged or put in an
action by the agent, and since an endpoint may echo them back, :meth:`OpenAIAgent.scrub` cuts
every form of both (the key, the password, ``user:password``, percent-encoded or not, and their
base64 header values; see :mod:`simworld._agents.redact`) out of everything the agent hands on:
each response body as it arrives, tool call names and arguments (strings and dict keys at any
depth), the assistant text it keeps, every error message and every log line, so the event log,
results, exports and report are clean by construction. A form shorter than 8 characters (a dummy
key such as ``EMPTY``) is cut only as a header's value, so normal text is never mangled.

httpx is an optional dependency (``simworld[openai]``); its successor httpx2, which has the same
API, is used when httpx is absent.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import random
import time
import weakref
from collections import deque
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from simworld._agents.chat import RESUME_NOTE, assistant_call, opening, resumed
from simworld._agents.chat import json_text as _json_text
from simworld._agents.chat import tool_content as _tool_content
from simworld._agents.redact import Redactor
from simworld._episode.episode import Observation
from simworld._episode.play import AgentFactory
from simworld._world.clock import wall_monotonic, wall_time
from simworld.errors import AgentTimeout, SimworldError

__all__ = ["DEFAULT_BASE_URL", "LLMAPIError", "LLMConfigError", "LLMDependencyError", "LLMError", "OpenAIAgent",
           "load_httpx", "openai_factory"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MISSING_HTTPX = ("--agent openai:MODEL requires the optional dependency httpx. "
                 "Install with: pip install 'simworld[openai]'")
#: Modules tried in order: httpx, then httpx2 (its maintained fork, same API, which the openai SDK now uses).
HTTPX_MODULES = ("httpx", "httpx2")

_log = logging.getLogger(__name__)


class LLMError(SimworldError):
    """Root of the errors the model agent raises."""


class LLMDependencyError(LLMError, ImportError):
    """httpx (or httpx2) is not installed."""


class LLMConfigError(LLMError, ValueError):
    """A model, base URL or API key the agent cannot work with."""


class LLMAPIError(LLMError, RuntimeError):
    """The endpoint refused the request, kept failing, or answered something unusable.

    ``status`` is the last HTTP status (None when the server could not be reached).
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def load_httpx() -> Any:
    """The httpx module (or httpx2), or an LLMDependencyError saying how to install it."""
    for name in HTTPX_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise LLMDependencyError(MISSING_HTTPX)


def _sleep(seconds: float) -> None:
    """Wait between retries (real time: freezegun does not patch ``time.sleep``); tests replace it."""
    time.sleep(seconds)


def _is_openai(base_url: str) -> bool:
    return (urlsplit(base_url).hostname or "").lower() == "api.openai.com"


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _retry_after(headers: Any) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``: seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(value, 0.0)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            value = parsedate_to_datetime(raw).timestamp() - wall_time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(value, 0.0) if math.isfinite(value) else None


class OpenAIAgent:
    """A tool-calling model over an OpenAI-compatible ``/chat/completions`` endpoint; one instance per episode."""

    #: Longest single wait between retries, whatever Retry-After says.
    max_wait_s = 60.0
    #: Told to the model after a crash, below the rebuilt conversation; None to say nothing.
    resume_note: str | None = RESUME_NOTE

    def __init__(self, model: str, base_url: str | None = None, *, api_key_env: str = "OPENAI_API_KEY",
                 max_retries: int = 5, backoff_s: float = 0.5, timeout_s: float = 60.0,
                 temperature: float | None = 0.0, seed: int | None = None,
                 episode_timeout_s: float | None = None, jitter: float = 0.5) -> None:
        began = wall_monotonic()
        httpx = load_httpx()
        if not isinstance(model, str) or not model.strip():
            raise LLMConfigError(f"Expected a model name, as in --agent openai:gpt-4o, but got {model!r}.")
        base = (base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or DEFAULT_BASE_URL).strip().rstrip("/")
        if urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).hostname:
            shown = _without_userinfo(base)
            if "@" in shown:  # malformed beyond urlsplit's reading of credentials: show nothing before the @
                shown = "***@" + shown.rpartition("@")[2]
            raise LLMConfigError(f"Expected --base-url as http(s)://HOST[:PORT]/PATH, e.g. http://localhost:8000/v1, "
                                 f"but got {shown!r}.")
        if not 0.0 <= jitter <= 1.0:
            raise LLMConfigError(f"Expected 0 <= jitter <= 1 but got jitter={jitter!r} (type={type(jitter).__name__}).")
        if max_retries < 0 or backoff_s < 0 or timeout_s <= 0:
            raise LLMConfigError(f"Expected max_retries >= 0, backoff_s >= 0 and timeout_s > 0 but got "
                                 f"{max_retries!r}, {backoff_s!r}, {timeout_s!r}.")
        if episode_timeout_s is not None and not episode_timeout_s > 0:
            raise LLMConfigError(f"Expected episode_timeout_s > 0 (or None for no deadline) but got "
                                 f"{episode_timeout_s!r}.")
        key = os.environ.get(api_key_env, "").strip() or None
        if key is None and _is_openai(base):
            raise LLMConfigError(f"--agent openai:{model} needs an API key: set the environment variable "
                                 f"{api_key_env} (or pass --base-url for a local server that needs none).")
        self.model = model
        self.base_url = base
        self.url = f"{base}/chat/completions"
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.episode_timeout_s = episode_timeout_s
        #: Wall-clock instant (``wall_monotonic``) past which no request or backoff may run; None for none.
        self.deadline = None if episode_timeout_s is None else began + episode_timeout_s
        self.temperature = temperature
        self.jitter = jitter
        self._rng = random.Random()  # wall-clock waits only: no result depends on it
        self.seed = seed
        self._redactor = Redactor(key, base)
        self._httpx = httpx
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s))
        weakref.finalize(self, self._client.close)
        self.messages: list[dict[str, Any]] = []
        self._queue: deque[dict[str, Any]] = deque()
        self._awaiting: str | None = None  # the tool_call_id whose result the next observation carries
        self.responses = 0  # completions received
        self.retries = 0  # requests sent again after a 429, a 5xx or a connection error

    def __repr__(self) -> str:
        return f"OpenAIAgent(model={self.model!r}, base_url={_without_userinfo(self.base_url)!r})"

    # -- the agent protocol --------------------------------------------------------------------------

    def act(self, observation: Observation) -> dict[str, Any] | None:
        """Answer the previous call, then play the next queued tool call or ask the model for more.

        Whatever it raises carries no secret: an error whose message held one (an httpx error naming
        the URL, say) is raised again scrubbed, as an LLMAPIError unless it was an AgentTimeout.
        """
        try:
            return self._act(observation)
        except Exception as exc:
            if not self._redactor:
                raise
            message = str(exc)
            scrubbed = self.scrub(message)
            if scrubbed == message:
                raise
            if isinstance(exc, AgentTimeout):
                raise AgentTimeout(scrubbed) from None
            if isinstance(exc, LLMAPIError):
                raise LLMAPIError(scrubbed, exc.status) from None
            raise LLMAPIError(f"{type(exc).__name__}: {scrubbed}") from None

    def scrub(self, value: Any) -> Any:
        """``value`` with the API key and URL credentials, in every form, replaced by ``[redacted]``.

        A string, or a JSON value whose strings and dict keys are scrubbed at any depth (see
        :class:`simworld._agents.redact.Redactor`). Everything the agent hands to simworld passes
        through here; without a key or credentials it returns ``value`` untouched, at no cost.
        """
        return self._redactor(value)

    def _act(self, observation: Observation) -> dict[str, Any] | None:
        if observation.resumed:
            self._resume(observation)
        elif not self.messages:
            self.messages = opening(observation)
        elif self._awaiting is not None:
            self.messages.append({"role": "tool", "tool_call_id": self._awaiting,
                                  "content": _tool_content(observation.last_status, observation.last_result)})
            self._awaiting = None
        if self._queue:
            return self._next()
        body = self._complete([{"type": "function", "function": dict(schema)} for schema in observation.tools])
        message = self._message(body)
        calls = self._tool_calls(message)
        text = _text_of(message.get("content"))
        usage = body.get("usage")
        tokens = {}
        if isinstance(usage, dict):
            tokens = {ours: usage[theirs] for ours, theirs in (("input_tokens", "prompt_tokens"),
                                                               ("output_tokens", "completion_tokens"))
                      if isinstance(usage.get(theirs), int) and not isinstance(usage.get(theirs), bool)}
        if not calls:
            # A plain reply: the model's last word to the customer (recorded and judged), then the episode stops,
            # still counting this reply's tokens.
            if text:
                self.messages.append({"role": "assistant", "content": text})
            return {"stop": True, **({"say": text} if text else {}), **({"usage": tokens} if tokens else {})}
        for i, call in enumerate(calls):
            call["text"] = text if i == 0 else None  # the response's text goes with its first call
        self._queue.extend(calls)
        action = self._next()
        if tokens:
            action["usage"] = tokens
        return action

    # -- the conversation ----------------------------------------------------------------------------

    def _resume(self, observation: Observation) -> None:
        """Rebuild the conversation from the session log a resumed agent is given."""
        self._queue.clear()
        self._awaiting = None
        self.messages = resumed(observation, self.resume_note)

    def _next(self) -> dict[str, Any]:
        """The next queued call as an action (with the text written with it), kept in the conversation as an
        assistant message of its own: one call a message, as an export writes it."""
        call = self._queue.popleft()
        self._awaiting = call["id"]
        name, args, text = call["function"]["name"], call["args"], call["text"]
        message = assistant_call(call["id"], name, args, text)
        if isinstance(args, str):  # arguments the model wrote that are not JSON: shown back as written
            message["tool_calls"][0]["function"]["arguments"] = call["function"]["arguments"]
        self.messages.append(message)
        action: dict[str, Any] = {"tool": name, "args": args}
        if text:
            action["say"] = text
        return action

    def _message(self, body: Any) -> dict[str, Any]:
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMAPIError(self._scrub(f"{self._where()} answered without choices: {_json_text(body)[:300]}"))
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise LLMAPIError(self._scrub(f"{self._where()} answered a choice without a message: "
                                          f"{_json_text(choices[0])[:300]}"))
        return message

    def _tool_calls(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The message's function calls, normalised: id, function {name, arguments text}, and parsed args."""
        calls = []
        raw_calls = message.get("tool_calls") or []
        for i, raw in enumerate(raw_calls if isinstance(raw_calls, list) else []):
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict) or raw.get("type", "function") != "function":
                continue
            name = function.get("name")
            arguments = function.get("arguments")
            if isinstance(arguments, dict):  # some servers send an object instead of JSON text
                arguments = _json_text(arguments)
            elif not isinstance(arguments, str):
                arguments = "{}" if arguments is None else str(arguments)
            try:
                # A JSON number becomes a double here as on every other path (orjson for cmd: and scripted:,
                # the MCP SDK, a Python agent's float), so an amount means the same whichever way it came:
                # the money parser reads a double only where it is exact and asks for a string beyond.
                args: Any = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, RecursionError):  # not JSON, or nested past what json's parser will recurse
                args = arguments  # the world answers with an argument error the model can read
            args = self.scrub(args)  # the body was scrubbed, but JSON escapes (\u0073k-...) can spell a secret anew
            call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else \
                f"call_{self.responses}_{i}"
            calls.append({"id": call_id, "function": {"name": str(name), "arguments": arguments}, "args": args})
        return calls

    # -- HTTP ----------------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"{_without_userinfo(self.url)} (model {self.model})"

    def _scrub(self, text: str) -> str:
        """``text`` (an error message or log line) with every secret cut out, whatever the server echoed."""
        return self._redactor.text(text)

    def _complete(self, tools: list[dict[str, Any]]) -> Any:
        """POST the conversation; retry 408, 409, 429, 5xx and connection errors; return the parsed body."""
        httpx = self._httpx
        payload: dict[str, Any] = {"model": self.model, "messages": self.messages, "tools": tools}
        if self.temperature is not None:
            payload["temperature"] = self.temperature
        if self.seed is not None:
            payload["seed"] = self.seed
        content = json.dumps(payload, ensure_ascii=False).encode()
        for attempt in range(self.max_retries + 1):
            wait = self.backoff_s * 2**attempt * (1.0 - self.jitter * self._rng.random())
            try:
                response = self._post(content)
            except httpx.UnsupportedProtocol as exc:
                raise LLMAPIError(self._scrub(f"{self._where()}: {exc}")) from None
            except httpx.TransportError as exc:
                status: int | None = None
                failure = f"could not reach the server ({type(exc).__name__}: {exc})"
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return self._body(response)
                failure = f"answered HTTP {status}{self._error_detail(response)}"
                if status not in (408, 409, 429) and status < 500:
                    raise LLMAPIError(self._scrub(f"{self._where()} {failure}"), status)
                asked = _retry_after(response.headers)
                if asked is not None:
                    wait = asked + self.jitter * self.backoff_s * self._rng.random()
            if attempt == self.max_retries:
                raise LLMAPIError(self._scrub(f"{self._where()} {failure}; gave up after {self.max_retries} "
                                              f"retr{'y' if self.max_retries == 1 else 'ies'}"), status)
            wait = min(wait, self.max_wait_s)
            left = self._left()
            if left is not None and wait >= left:
                raise AgentTimeout(self._scrub(f"{self._where()} {failure}; the episode's {self.episode_timeout_s:g} "
                                               f"s timeout leaves no time to retry (the next try was due in "
                                               f"{wait:.2f}s)"))
            _log.warning("%s: %s; retrying in %.2fs", self._where(), self._scrub(failure), wait)
            self.retries += 1
            _sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _left(self) -> float | None:
        """Seconds left before the episode's deadline (None without one)."""
        return None if self.deadline is None else self.deadline - wall_monotonic()

    def _out_of_time(self) -> AgentTimeout:
        return AgentTimeout(f"{self._where()} gave no complete answer within the episode's "
                            f"{self.episode_timeout_s:g} s timeout; the request was dropped")

    def _post(self, content: bytes) -> Any:
        """POST ``content`` and read the whole response, never waiting past the episode's deadline.

        httpx's timeout bounds each socket operation, not the request: a server that trickles
        bytes would never trip it. So the response is streamed, the deadline checked between
        chunks, and the bytes read wrapped in a fresh, complete ``Response``.
        """
        httpx = self._httpx
        deadline = self.deadline
        timeout = self.timeout_s
        if deadline is not None:
            left = deadline - wall_monotonic()
            if left <= 0:
                raise self._out_of_time()
            timeout = min(timeout, left)
        try:
            with self._client.stream("POST", self.url, content=content, timeout=httpx.Timeout(timeout)) as response:
                raw = []
                for chunk in response.iter_raw():
                    raw.append(chunk)
                    if deadline is not None and wall_monotonic() >= deadline:
                        raise self._out_of_time()
                return httpx.Response(response.status_code, headers=response.headers, content=b"".join(raw),
                                      request=response.request)
        except httpx.TimeoutException:
            if deadline is not None and wall_monotonic() >= deadline - 0.01:  # the episode's deadline, not the server
                raise self._out_of_time() from None
            raise

    def _body(self, response: Any) -> Any:
        try:
            body = response.json()
        except ValueError:
            raise LLMAPIError(self._scrub(f"{self._where()} answered HTTP {response.status_code} with a body that "
                                          f"is not JSON: {self._scrub(response.text)[:300]!r}"),
                              response.status_code) from None
        self.responses += 1
        # Scrubbed as it arrives, so the tool calls, the text and any error made from it hold no secret.
        return self.scrub(body)

    def _error_detail(self, response: Any) -> str:
        """``: message`` from an OpenAI-style error body (or the start of the body text), scrubbed.

        Scrubbed before it is cut short, so no secret is cut in two and left half shown.
        """
        try:
            body = self.scrub(response.json())
        except ValueError:
            text = self._scrub(response.text).strip()
            return f": {text[:300]}" if text else ""
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            kind = error.get("type") or error.get("code")
            message = error.get("message")
            return (f" ({kind})" if kind else "") + (f": {message}" if message else "")
        if isinstance(error, str):
            return f": {error}"
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return f": {body['message']}"
        return f": {_json_text(body)[:300]}"


def _text_of(content: Any) -> str | None:
    """The text of a message's ``content``: a string, or the text parts of a list of parts (as some servers
    send); None when there is none."""
    if isinstance(content, str):
        return content if content.strip() else None
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in ("text", "output_text")]
        joined = "".join(t for t in parts if isinstance(t, str))
        return joined if joined.strip() else None
    return None


def openai_factory(model: str, base_url: str | None = None, **options: Any) -> AgentFactory:
    """The factory behind ``--agent openai:MODEL [--base-url URL]``: a fresh agent per episode.

    It builds one agent now, so a missing httpx, a missing API key or a malformed URL
    fails before the run starts rather than as every episode's error. ``options`` are
    OpenAIAgent's keyword arguments (api_key_env, max_retries, backoff_s, timeout_s,
    temperature, seed). Each agent is given its scenario's ``timeout_s`` as its
    ``episode_timeout_s``, so it keeps to the episode's deadline itself.
    """
    OpenAIAgent(model, base_url, **options)
    return lambda scenario, seed, variables: OpenAIAgent(model, base_url, **{
        "episode_timeout_s": scenario.timeout_s, **options})
