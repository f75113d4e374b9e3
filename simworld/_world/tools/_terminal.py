"""TERMINAL tools: each ends the episode and sets its outcome class."""

from __future__ import annotations

from typing import Any

from simworld._world.models import Decline, Escalation, InfoRequest
from simworld._world.tools._registry import Kind, tool
from simworld._world.world import World
from simworld.errors import ToolArgumentError

__all__ = ["OUTCOMES", "TERMINAL_TOOLS"]

#: The closed list of outcome classes, in the order the docs give them.
OUTCOMES = ("act", "escalate", "request_information", "decline")


def _text(value: str, name: str, tool_name: str) -> str:
    if not value.strip():
        raise ToolArgumentError(f"{tool_name}: {name} is empty; say it in a sentence.")
    return value


def _customer_or_blank(world: World, customer_id: str) -> str:
    return world.customer(customer_id).id if customer_id else ""


@tool(Kind.TERMINAL, latency=0.5)
def finish(world: World, summary: str) -> dict[str, Any]:
    """End the conversation having done what the customer asked (outcome: act).

    Args:
        summary: What you did, in a sentence or two.
    """
    return {"outcome": "act", "summary": _text(summary, "summary", "finish")}


@tool(Kind.TERMINAL, latency=0.5)
def escalate(world: World, reason: str, customer_id: str = "") -> dict[str, Any]:
    """Hand the request to a human colleague and end the conversation (outcome: escalate).

    Args:
        reason: Why a human must decide, e.g. the rule that requires it.
        customer_id: The customer concerned, if known.
    """
    record = Escalation(f"esc-{world.seq:04d}", _customer_or_blank(world, customer_id),
                        _text(reason, "reason", "escalate"), world.clock.now)
    world.put(record)
    return {"outcome": "escalate", "escalation_id": record.id}


@tool(Kind.TERMINAL, latency=0.5)
def request_information(world: World, question: str, customer_id: str = "") -> dict[str, Any]:
    """Ask the customer for what you need before you can act, and end the conversation (outcome: request_information).

    Args:
        question: The question to put to the customer.
        customer_id: The customer concerned, if known.
    """
    record = InfoRequest(f"inf-{world.seq:04d}", _customer_or_blank(world, customer_id),
                         _text(question, "question", "request_information"), world.clock.now)
    world.put(record)
    return {"outcome": "request_information", "info_request_id": record.id}


@tool(Kind.TERMINAL, latency=0.5)
def decline(world: World, reason: str, customer_id: str = "") -> dict[str, Any]:
    """Decline the request, with the reason you will give the customer, and end the conversation (outcome: decline).

    Args:
        reason: Why the request cannot be done, e.g. the rule it breaks.
        customer_id: The customer concerned, if known.
    """
    record = Decline(f"dec-{world.seq:04d}", _customer_or_blank(world, customer_id),
                     _text(reason, "reason", "decline"), world.clock.now)
    world.put(record)
    return {"outcome": "decline", "reason": record.reason, "decline_id": record.id}


TERMINAL_TOOLS = [finish, escalate, request_information, decline]
