"""The tool decorator: a typed signature and a docstring become the tool's JSON schema.

One source of truth per tool. ``@tool(READ, latency=0.2)`` reads the function's
type hints and its Google-style docstring once, at import, and builds both the
JSON schema the agent is shown (and that MCP and the training exports reuse) and
the validator that turns a bad argument into an error result the agent can read.
"""

from __future__ import annotations

import enum
import functools
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, Literal, NewType, get_args, get_origin

import attrs
import orjson

from simworld._world.money import AMOUNT_PATTERN
from simworld.errors import ToolArgumentError

__all__ = ["Amount", "IsoDate", "Kind", "Tool", "ToolResult", "tool"]

#: A money amount: a decimal string such as "333.34" in the language of ``simworld._world.money.AMOUNT_PATTERN``
#: (a JSON number is read through its shortest decimal text, where a double holds it exactly).
Amount = NewType("Amount", str)
#: A calendar date as ISO "YYYY-MM-DD".
IsoDate = NewType("IsoDate", str)


class Kind(enum.Enum):
    """What a tool does to the world."""

    READ = "read"
    WRITE = "write"
    TERMINAL = "terminal"


_MISSING = object()


def _schema_of(hint: Any, where: str) -> dict[str, Any]:
    if hint is Amount:
        return {"type": "string", "description": "A decimal amount in the plan's currency, e.g. '333.34'.",
                "pattern": AMOUNT_PATTERN}
    if hint is IsoDate:
        return {"type": "string", "format": "date", "description": "A date as YYYY-MM-DD."}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    origin = get_origin(hint)
    if origin is Literal:
        values = list(get_args(hint))
        return {"type": "string", "enum": values}
    if origin is list:
        (item,) = get_args(hint)
        return {"type": "array", "items": _schema_of(item, where)}
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        return {"type": "object", "properties": {k: _schema_of(v, f"{where}.{k}") for k, v in hints.items()},
                "required": sorted(hint.__required_keys__), "additionalProperties": False}
    raise TypeError(f"{where}: no JSON schema for type {hint!r}")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and its Args: entries."""
    text = inspect.cleandoc(doc or "")
    parts = re.split(r"^Args:\s*$", text, maxsplit=1, flags=re.M)
    description = parts[0].strip()
    params: dict[str, str] = {}
    if len(parts) == 2:
        body = re.split(r"^\w[\w ]*:\s*$", parts[1], maxsplit=1, flags=re.M)[0]
        current = None
        for line in body.splitlines():
            m = re.match(r"^\s{0,8}(\w+):\s*(.*)$", line)
            if m and (current is None or not line.startswith(" " * 8)):
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
    return " ".join(description.split()), params


#: What a tool returns: a dict of JSON values, any of which (or the whole result) may be an ``orjson.Fragment``, a
#: piece already serialised (a record's cached JSON), which the world writes as it is when it records the result.
ToolResult = dict[str, Any] | orjson.Fragment

#: Checks one argument against its declared type: ``(value, where) -> value``, or a ToolArgumentError naming ``where``.
Checker = Callable[[Any, str], Any]


@attrs.frozen(eq=False)
class Tool:
    """A tool: its name, kind, simulated latency, schema and implementation."""

    name: str
    kind: Kind
    latency: float
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., ToolResult]
    hints: dict[str, Any]
    defaults: dict[str, Any]
    #: A read's checks, made before it builds its result (the world and the bound arguments; raises the ToolError the
    #: call would): a call they pass is ok. Lets a caller that reads no result (a solution played while grading) make
    #: the call without building its result (see :meth:`World.pass_over <simworld._world.world.World.pass_over>`).
    #: None: the call is made whole.
    checks: Callable[..., Any] | None = None
    # Per parameter, in signature order: its name, the place errors name, its checker, and its default (or _MISSING).
    # Worked out once from ``hints``: a call only runs the checkers.
    _params: tuple[tuple[str, str, Checker, Any], ...] = attrs.field(init=False, repr=False)
    #: :meth:`bind`, written out for this tool's parameters (see :func:`_binder`) at its first call: what a call runs.
    binder: Callable[[Any], dict[str, Any]] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        params = tuple((name, f"{self.name}: {name}", _checker(hint), self.defaults.get(name, _MISSING))
                       for name, hint in self.hints.items())
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "binder", self._first_bind)  # written out at the first call (a run's start uses few)

    def _first_bind(self, args: Any) -> dict[str, Any]:
        """:meth:`bind` at this tool's first call: its binder is written out now, kept, and called."""
        binder = _binder(self._params, self._bind)
        object.__setattr__(self, "binder", binder)
        return binder(args)

    def schema(self) -> dict[str, Any]:
        """The tool's JSON schema in the common function-calling shape."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def bind(self, args: Any) -> dict[str, Any]:
        """Check ``args`` against the signature; return keyword arguments or raise ToolArgumentError."""
        return self.binder(args)

    def _bind(self, args: Any) -> dict[str, Any]:
        """:meth:`bind`, parameter by parameter: what the written-out binder hands any call it does not take."""
        if not isinstance(args, dict):
            raise ToolArgumentError(f"{self.name}: expected args as a JSON object but got {args!r}.")
        hints = self.hints
        for key in args:
            if key not in hints:
                unknown = args.keys() - hints.keys()
                raise ToolArgumentError(f"{self.name}: unknown argument(s) {sorted(unknown)!r}; "
                                        f"allowed: {sorted(hints)!r}.")
        bound: dict[str, Any] = {}
        for name, where, check, default in self._params:
            if name in args:
                bound[name] = check(args[name], where)
            elif default is not _MISSING:
                bound[name] = default
            else:
                raise ToolArgumentError(f"{self.name}: missing required argument {name!r}.")
        return bound


def _binder(params: tuple[tuple[str, str, Checker, Any], ...],
            generic: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    """A function that binds arguments as ``generic`` (:meth:`Tool._bind`) does, written out for ``params``: each
    argument read once and its checker called only when the value is not of the exact type it passes at once (a
    string for a string, an amount or a date). Any call it does not take (not a dict, an unknown or a missing
    argument) it hands to ``generic``, which names the problem. A call then costs a few bytecodes an argument
    instead of a loop and a checker call each: tools are called at every step of every episode and solution."""
    lines = ["def bind(args):",
             "    if type(args) is not dict or not args.keys() <= _names:",
             "        return _generic(args)"]
    scope: dict[str, Any] = {"_generic": generic, "_names": frozenset(name for name, *_ in params), "_M": _MISSING}
    out = []
    for n, (name, where, check, default) in enumerate(params):
        scope[f"_c{n}"], scope[f"_d{n}"] = check, default
        lines.append(f"    v{n} = args.get({name!r}, _M)")
        if default is _MISSING:
            lines += [f"    if v{n} is _M:", "        return _generic(args)"]
        else:
            lines += [f"    if v{n} is _M:", f"        v{n} = _d{n}"]
        exact = _EXACT.get(check)
        test = f"type(v{n}) is not {exact.__name__}" if exact is not None else "True"
        lines += [f"    {'elif' if default is not _MISSING else 'if'} {test}:",
                  f"        v{n} = _c{n}(v{n}, {where!r})"]
        out.append(f"{name!r}: v{n}")
    lines.append(f"    return {{{', '.join(out)}}}")
    exec(compile("\n".join(lines) + "\n", "<simworld tool binder>", "exec"), scope)  # noqa: S102 - our own text
    bind: Callable[[Any], dict[str, Any]] = scope["bind"]
    return bind


def _check_amount(value: Any, where: str) -> Any:
    # Money is parsed against the plan's currency inside the tool; here only the shape.
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ToolArgumentError(f"{where}: expected a decimal amount such as '12.34' but got {value!r}.")
    return value


def _check_str(value: Any, where: str) -> Any:
    if not isinstance(value, str):
        raise ToolArgumentError(f"{where}: expected a string but got {value!r} (type={type(value).__name__}).")
    return value


def _check_bool(value: Any, where: str) -> Any:
    if not isinstance(value, bool):
        raise ToolArgumentError(f"{where}: expected true or false but got {value!r}.")
    return value


def _check_int(value: Any, where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolArgumentError(f"{where}: expected an integer but got {value!r} (type={type(value).__name__}).")
    return value


#: The checkers a value of one exact type always passes, unchanged: the binder calls them for any other value only.
_EXACT: dict[Checker, type] = {_check_str: str, _check_int: int, _check_bool: bool, _check_amount: str}


@functools.cache
def _checker(hint: Any) -> Checker:
    """The checker of a declared argument type, made once per type: a call's arguments are checked by these alone."""
    if hint is Amount:
        return _check_amount
    if hint in (str, IsoDate):
        return _check_str
    if hint is bool:
        return _check_bool
    if hint is int:
        return _check_int
    origin = get_origin(hint)
    if origin is Literal:
        allowed = get_args(hint)

        def check_literal(value: Any, where: str) -> Any:
            if value not in allowed:
                raise ToolArgumentError(f"{where}: expected one of {list(allowed)!r} but got {value!r}.")
            return value

        return check_literal
    if origin is list:
        (item,) = get_args(hint)
        check_item = _checker(item)

        def check_list(value: Any, where: str) -> Any:
            if not isinstance(value, list):
                raise ToolArgumentError(f"{where}: expected a list but got {value!r}.")
            return [check_item(v, f"{where}[{i}]") for i, v in enumerate(value)]

        return check_list
    if typing.is_typeddict(hint):
        return _typed_dict_checker(hint)
    raise TypeError(f"unsupported type {hint!r}")  # pragma: no cover - caught at import by _schema_of


def _typed_dict_checker(hint: Any) -> Checker:
    hints = typing.get_type_hints(hint)
    fields = {k: _checker(v) for k, v in hints.items()}
    required = hint.__required_keys__

    def check_typed_dict(value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            raise ToolArgumentError(f"{where}: expected an object but got {value!r}.")
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise ToolArgumentError(f"{where}: unknown key(s) {unknown!r}; allowed: {sorted(fields)!r}.")
        missing = sorted(required - set(value))
        if missing:
            raise ToolArgumentError(f"{where}: missing key(s) {missing!r}.")
        return {k: fields[k](v, f"{where}.{k}") for k, v in value.items()}

    return check_typed_dict


def tool(kind: Kind, *, latency: float,
         checks: Callable[..., Any] | None = None) -> Callable[[Callable[..., ToolResult]], Tool]:
    """Declare a tool. Its first parameter is the world; the rest are the agent's arguments.

    Args:
        kind: READ, WRITE or TERMINAL.
        latency: fixed simulated seconds the call takes.
        checks: for a READ, every check it makes before it builds its result, called as the tool is (see
            :attr:`Tool.checks`); ``tests/test_tools.py`` holds each tool's checks to fail exactly when it does.
    """
    if checks is not None and kind is not Kind.READ:
        raise TypeError("only a READ tool's result can be left unbuilt: checks= is for Kind.READ")

    def wrap(fn: Callable[..., ToolResult]) -> Tool:
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
        params = list(sig.parameters.values())[1:]
        description, docs = _parse_docstring(fn.__doc__ or "")
        properties: dict[str, Any] = {}
        required: list[str] = []
        defaults: dict[str, Any] = {}
        for p in params:
            schema = dict(_schema_of(hints[p.name], f"{fn.__name__}.{p.name}"))
            if p.name not in docs:
                raise TypeError(f"tool {fn.__name__}: parameter {p.name!r} has no entry under Args: in its docstring")
            schema["description"] = docs[p.name]
            properties[p.name] = schema
            if p.default is inspect.Parameter.empty:
                required.append(p.name)
            else:
                defaults[p.name] = p.default
        parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
        arg_hints = {p.name: hints[p.name] for p in params}
        return Tool(fn.__name__, kind, latency, description, parameters, fn, arg_hints, defaults, checks)

    return wrap
