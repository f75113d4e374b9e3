"""An episode as a chat: the messages a tool-calling model is shown, in OpenAI's chat shape.

One place for what every chat-driven agent sees, so ``--agent openai:MODEL``, the Inspect
task and the verifiers environment show a model the same conversation:

- system = the policy text, user = the customer's request;
- each call answered by a ``tool`` message whose content is the result as JSON text, or for
  an ``error``/``denied`` call ``{"status", "error", ...}`` as JSON text;
- a fresh agent after a crash (a scenario's ``recovery`` block) starts over from the session
  log it is given (:attr:`Observation.history`), followed by :data:`RESUME_NOTE`.
"""

from __future__ import annotations

import json
from typing import Any

from simworld._episode.episode import Observation

__all__ = ["RESUME_NOTE", "json_text", "opening", "resumed", "tool_content"]

#: Told to the model after a crash, below the rebuilt conversation.
RESUME_NOTE = ("The session was restarted after an interruption. The calls above are from the session log, which "
               "may have missed the last call; the records are as they are now.")


def json_text(value: Any) -> str:
    """``value`` as compact JSON text with sorted keys (non-ASCII kept as is)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def tool_content(status: str | None, result: Any) -> str:
    """A tool message's content: the result as JSON text, or the error with its status."""
    if status in (None, "ok"):
        return json_text(result)
    if isinstance(result, dict):
        return json_text({"status": status, **result})
    return json_text({"status": status, "error": result})


def opening(observation: Observation) -> list[dict[str, Any]]:
    """The conversation's first two messages: the policy (system) and the request (user)."""
    return [{"role": "system", "content": observation.policy}, {"role": "user", "content": observation.request}]


def resumed(observation: Observation, note: str | None = RESUME_NOTE) -> list[dict[str, Any]]:
    """The conversation a fresh agent starts from after a crash: the opening, then one assistant call and one
    tool answer per entry of the session log (ids ``call_SEQ``), then ``note`` as a user message (if any)."""
    messages = opening(observation)
    for entry in observation.history:
        if not entry.get("tool"):
            continue  # an action that was not a tool call has no place in a chat transcript
        call_id = f"call_{entry.get('seq')}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": entry["tool"], "arguments": json_text(entry.get("args", {}))}}]})
        messages.append({"role": "tool", "tool_call_id": call_id,
                         "content": tool_content(entry.get("status"), entry.get("result"))})
    if note:
        messages.append({"role": "user", "content": note})
    return messages
