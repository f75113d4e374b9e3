"""Templates: ``{var}`` placeholders and ``$from`` references in prompts, solutions, scripts and steps."""

from __future__ import annotations

import re
from typing import Any

from simworld.errors import ScenarioError

__all__ = ["render", "resolve_args"]

_VAR = re.compile(r"^\{(\w+)\}$")


def render(template: str, variables: dict[str, Any], where: str) -> str:
    """Fill ``{var}`` placeholders; an unknown one is a ScenarioError naming it."""
    try:
        return template.format_map(variables)
    except KeyError as exc:
        known = ", ".join(sorted(variables))
        raise ScenarioError(f"{where}: unknown placeholder {{{exc.args[0]}}}; known: {known}.") from None
    except (ValueError, IndexError) as exc:
        raise ScenarioError(f"{where}: bad placeholder ({exc}); write literal braces as {{{{ and }}}}.") from None


def resolve_args(value: Any, variables: dict[str, Any], results: list[Any], where: str) -> Any:
    """Resolve templates and ``$from`` references in a step's arguments."""
    if isinstance(value, str):
        m = _VAR.match(value)
        if m and m.group(1) in variables:
            return variables[m.group(1)]
        return render(value, variables, where) if "{" in value else value
    if isinstance(value, list):
        return [resolve_args(v, variables, results, where) for v in value]
    if isinstance(value, dict):
        if set(value) == {"$from"}:
            step, path = value["$from"]
            try:
                found = results[step]
                for part in path.split(".") if path else []:
                    found = found[int(part)] if isinstance(found, list) else found[part]
            except (IndexError, KeyError, TypeError, ValueError):
                raise ScenarioError(f"{where}: $from {value['$from']!r} does not resolve against the results "
                                    "so far.") from None
            return found
        return {k: resolve_args(v, variables, results, where) for k, v in value.items()}
    return value
