"""Templates: ``{var}`` placeholders and ``$from`` references in prompts, solutions, scripts and steps."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import Any

from simworld.errors import ScenarioError

__all__ = ["args_resolver", "check_template", "from_reference", "render", "resolve_args"]

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


#: What :func:`args_resolver` gives: a function of (variables, results) giving the step's resolved arguments.
Resolver = Callable[[dict[str, Any], list[Any]], Any]


def args_resolver(value: Any) -> Resolver:
    """``resolve_args`` for one step's arguments, worked out once: a function of ``(variables, results)`` that gives
    what ``resolve_args(value, variables, results, where)`` gives, for a caller that plays the same step again and
    again (a solution, at every seed it is graded at) and copies what it gets before a tool reads it.

    Only its placeholders and references are read at each call: a part with neither is given as it is, shared
    between calls, not made anew. A problem raises as ``resolve_args`` raises it, but names no step (``where`` is
    empty): a caller that must name the step resolves it with ``resolve_args``.
    """
    made = _resolver(value)
    if made is None:
        return lambda variables, results: value
    return made


def _resolver(value: Any) -> Resolver | None:
    """:func:`args_resolver`'s function for ``value``, or None when ``value`` resolves to itself."""
    if isinstance(value, str):
        if "{" not in value:
            return None
        name = _whole_name(value)
        if name:
            return lambda variables, results: variables[name] if name in variables else render(value, variables, "")
        return lambda variables, results: render(value, variables, "")
    if isinstance(value, list):
        items = [(_resolver(v), v) for v in value]
        if all(made is None for made, _ in items):
            return None
        return lambda variables, results: [v if made is None else made(variables, results) for made, v in items]
    if isinstance(value, dict):
        if len(value) == 1 and "$from" in value:
            return lambda variables, results: resolve_args(value, variables, results, "")
        fields = [(k, _resolver(v), v) for k, v in value.items()]
        if all(made is None for _, made, _ in fields):
            return None
        return lambda variables, results: {k: v if made is None else made(variables, results) for k, made, v in fields}
    return None
