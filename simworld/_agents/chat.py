"""An episode as a chat: the messages a tool-calling model is shown, in OpenAI's chat shape.

One place for what every chat-driven agent sees and what every export writes, so
``--agent openai:MODEL``, the Inspect task, the verifiers environment and the OpenAI and
TRL exports hold the same conversation:

- system = the conversation's rules (:mod:`simworld._episode.contract`), then the policy;
  user = the customer's request;
- for each call an ``assistant`` message with that one call (the text the model wrote with
  it, if any, as its ``content``), answered by a ``tool`` message whose content is the
  result as JSON text, or for an ``error``/``denied`` call ``{"status", "error", ...}``;
  several calls in one model response are written as consecutive assistant messages, one
  call each, the response's text on the first;
- text the model wrote with no call is an ``assistant`` message with ``content`` only;
- the terminal call ends the conversation: it has no ``tool`` answer;
- a fresh agent after a crash (a scenario's ``recovery`` block) starts over from the session
  log it is given (:attr:`Observation.history`), followed by :data:`RESUME_NOTE`.

:func:`conversation` builds the whole chat from an episode's events; a chat agent that keeps
its own history in the same shape (as :class:`~simworld._agents.llm.OpenAIAgent` does) shows
the model exactly what an export writes, but for the call ids (``call_SEQ`` there, the
model's own here).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from simworld._episode.contract import CONTRACT_VERSION, system_text
from simworld._episode.episode import Observation

__all__ = ["RESUME_NOTE", "assistant_call", "conversation", "json_text", "opening", "resumed", "system_for",
           "tool_content"]

#: Told to the model after a crash, below the rebuilt conversation.
RESUME_NOTE = ("The session was restarted after an interruption. The calls above are from the session log, which "
               "may have missed the last call; the records are as they are now.")


def json_text(value: Any) -> str:
    """``value`` as compact JSON text with sorted keys (non-ASCII kept as is): the bytes an export writes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # an integer past 64 bits in a server's body: Python's own encoder takes it
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def tool_content(status: str | None, result: Any) -> str:
    """A tool message's content: the result as JSON text, or the error with its status."""
    if status in (None, "ok"):
        return json_text(result)
    if isinstance(result, orjson.Fragment):  # an export's result kept as its bytes
        result = orjson.loads(orjson.dumps(result))
    if isinstance(result, dict):
        return json_text({"status": status, **result})
    return json_text({"status": status, "error": result})


def system_for(policy: str, contract: str | None = CONTRACT_VERSION) -> str:
    """The system message of an episode whose policy text is ``policy``, recorded under ``contract``.

    An event file written before the conversation's rules were stated has no contract: its model
    was shown the policy alone, and that is what its conversation holds.
    """
    return system_text(policy) if contract == CONTRACT_VERSION else policy


def opening(observation: Observation) -> list[dict[str, Any]]:
    """The conversation's first two messages: the rules and the policy (system), and the request (user)."""
    return [{"role": "system", "content": system_text(observation.policy)},
            {"role": "user", "content": observation.request}]


def assistant_call(call_id: str, name: str, args: Any, text: str | None = None, *,
                   fmt: str = "openai") -> dict[str, Any]:
    """One assistant message carrying one call (and the text written with it, if any)."""
    if fmt == "openai":
        call: dict[str, Any] = {"id": call_id, "type": "function",
                                "function": {"name": name, "arguments": json_text(args)}}
    else:  # trl: arguments as an object
        call = {"type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, dict) else {"value": args}}}
    message: dict[str, Any] = {"role": "assistant"}
    if text:
        message["content"] = text
    message["tool_calls"] = [call]
    return message


def conversation(system: str, request: str, events: Iterable[Mapping[str, Any]], fmt: str = "openai", *,
                 answer_last: bool = False) -> list[dict[str, Any]]:
    """The chat an episode was, from its events as JSON values (``seq``, ``tool``, ``kind``, ``args``, ``result``,
    ``status``), in ``fmt`` (``openai``: ids and arguments as JSON text; ``trl``: arguments as objects, tool turns
    named).

    Actions that were not tool calls (``invalid`` events) are not turns. A ``say`` event is the
    text of the assistant message of the call that follows it with the same ``seq``, or a
    message of its own. The last call, if terminal, has no answer unless ``answer_last``.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": request}]
    turns = [e for e in events if e["kind"] != "invalid"]
    calls = [i for i, e in enumerate(turns) if e["kind"] != "say"]
    last = calls[-1] if calls else -1
    text: str | None = None
    text_seq: Any = None
    for i, e in enumerate(turns):
        if e["kind"] == "say":
            if text is not None:
                messages.append({"role": "assistant", "content": text})
            text, text_seq = e["args"]["text"], e["seq"]
            continue
        if text is not None and text_seq != e["seq"]:
            messages.append({"role": "assistant", "content": text})
            text = None
        tool = e["tool"]
        call_id = f"call_{e['seq']}"
        messages.append(assistant_call(call_id, tool, e["args"], text, fmt=fmt))
        text = None
        if i == last and e["kind"] == "terminal" and not answer_last:
            continue
        content = tool_content(e["status"], e["result"])
        messages.append({"role": "tool", "tool_call_id": call_id, "content": content} if fmt == "openai"
                        else {"role": "tool", "name": tool, "content": content})
    if text is not None:
        messages.append({"role": "assistant", "content": text})
    return messages


def resumed(observation: Observation, note: str | None = RESUME_NOTE) -> list[dict[str, Any]]:
    """The conversation a fresh agent starts from after a crash: the opening, then the session log as turns
    (calls with ids ``call_SEQ`` and their answers, the text the agent wrote), then ``note`` as a user message
    (if any)."""
    events = []
    for entry in observation.history:
        if "say" in entry:
            events.append({"seq": entry.get("seq"), "kind": "say", "args": {"text": entry["say"]}})
        elif entry.get("tool"):  # an action that was not a tool call has no place in a chat transcript
            events.append({"seq": entry.get("seq"), "tool": entry["tool"], "kind": "call",
                           "args": entry.get("args", {}), "status": entry.get("status"),
                           "result": entry.get("result")})
    messages = conversation(system_text(observation.policy), observation.request, events, answer_last=True)
    if note:
        messages.append({"role": "user", "content": note})
    return messages
