"""The tool set: every tool an agent may call, by name.

Each tool is a typed function whose signature and docstring are its JSON schema,
tagged READ, WRITE or TERMINAL, with a fixed simulated latency.
"""

from __future__ import annotations

from typing import Any

from simworld._world.tools._read import READ_TOOLS
from simworld._world.tools._registry import Amount, IsoDate, Kind, Tool, tool
from simworld._world.tools._terminal import OUTCOMES, TERMINAL_TOOLS
from simworld._world.tools._write import WRITE_TOOLS, ScheduleItem

__all__ = ["OUTCOMES", "TOOLS", "Amount", "IsoDate", "Kind", "ScheduleItem", "Tool", "schemas", "tool"]

#: Every built-in tool by name, in a fixed order (read, write, terminal).
TOOLS: dict[str, Tool] = {t.name: t for t in (*READ_TOOLS, *WRITE_TOOLS, *TERMINAL_TOOLS)}


def schemas(names: list[str] | None = None) -> list[dict[str, Any]]:
    """JSON schemas of the named tools (all by default), in the registry's order."""
    return [t.schema() for t in TOOLS.values() if names is None or t.name in names]
