"""Templates: ``{var}`` placeholders and ``$from`` references in prompts, solutions, scripts and steps."""

from __future__ import annotations

import re
import string
from typing import Any

from simworld.errors import ScenarioError

__all__ = ["check_template", "from_reference", "render", "resolve_args"]

_VAR = re.compile(r"^\{(\w+)\}$")


_FORMATTER = string.Formatter()


#: Templates already found to hold only plain fields (a prompt is rendered once per episode).
_PLAIN: set[str] = set()


def check_template(template: str, where: str) -> None:
    """Refuse anything in ``template`` but plain ``{name}`` fields (and ``{{``/``}}`` for braces).

    A format spec (``{name:>999999999}``), a conversion (``{name!r}``), an attribute
    (``{name.x}``) or an index (``{name[0]}``) would let a scenario or a script make a
    gigabyte of text or reach into objects; each is a ScenarioError naming it.
    """
    if type(template) is str and template in _PLAIN:
        return
    try:
        fields = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ScenarioError(f"{where}: bad placeholder ({exc}); write literal braces as {{{{ and }}}}.") from None
    for _literal, name, spec, conversion in fields:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise ScenarioError(f"{where}: placeholder {shown!r} is not allowed; templates take only plain "
                                "{name} fields (no format spec, conversion, attribute or index).")
    if type(template) is str and len(_PLAIN) < 4096:
        _PLAIN.add(template)


def render(template: str, variables: dict[str, Any], where: str) -> str:
    """Fill ``{var}`` placeholders; an unknown one, or anything but a plain field, is a ScenarioError naming it."""
    check_template(template, where)
    try:
        return template.format_map(variables)
    except KeyError as exc:
        known = ", ".join(sorted(variables))
        raise ScenarioError(f"{where}: unknown placeholder {{{exc.args[0]}}}; known: {known}.") from None
    except (ValueError, IndexError) as exc:
        raise ScenarioError(f"{where}: bad placeholder ({exc}); write literal braces as {{{{ and }}}}.") from None


def from_reference(ref: Any, where: str, before: int | None = None) -> tuple[int, str]:
    """The ``(step, path)`` of a ``{"$from": [STEP, "dotted.path"]}`` reference, or a ScenarioError naming the
    expected form; with ``before`` (the index of the step that holds it), STEP must name an earlier step."""
    if not (isinstance(ref, list) and len(ref) == 2 and type(ref[0]) is int and ref[0] >= 0
            and isinstance(ref[1], str)):
        raise ScenarioError(f'{where}: $from {ref!r} is not a reference; expected {{"$from": [STEP, '
                            '"dotted.path"]}, STEP the 0-based index of an earlier step of the same file.')
    if before is not None and ref[0] >= before:
        raise ScenarioError(f"{where}: $from {ref!r} names step {ref[0]}, but this is step {before} (0-based); a "
                            "step can use only the result of an earlier step of the same file.")
    return ref[0], ref[1]


#: Each template met so far and the variable it is as a whole ("{plan_id}" is plan_id), or "" when it is not one:
#: a solution's steps use the same few templates at every seed.
_WHOLE: dict[str, str] = {}


def _whole_name(template: str) -> str:
    """The variable ``template`` is as a whole value (``{name}``), or ""; kept for the next time it is met."""
    m = _VAR.match(template)
    name = m.group(1) if m else ""
    if type(template) is str and len(_WHOLE) < 4096:
        _WHOLE[template] = name
    return name


def resolve_args(value: Any, variables: dict[str, Any], results: list[Any], where: str) -> Any:
    """Resolve templates and ``$from`` references in a step's arguments."""
    if isinstance(value, str):
        if "{" not in value:  # no placeholder (and so no whole-value {var} either)
            return value
        name = _WHOLE.get(value) if type(value) is str else None
        if name is None:
            name = _whole_name(value)
        if name and name in variables:
            return variables[name]
        return render(value, variables, where)
    if isinstance(value, list):
        return [resolve_args(v, variables, results, where) for v in value]
    if isinstance(value, dict):
        if len(value) == 1 and "$from" in value:
            step, path = from_reference(value["$from"], where)
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
