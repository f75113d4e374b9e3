"""A small JSON Schema checker for the subset simworld's published schemas use.

task.json is checked at load against ``simworld/schemas/task.schema.json`` (draft 2020-12),
the one published description of the format. The core install does not depend on the
``jsonschema`` package, so this module checks the keywords that schema uses: ``type``,
``enum``, ``properties``, ``additionalProperties``, ``required``, ``minProperties``,
``items``, ``minItems``, ``maxItems``, ``minimum``, ``maximum``, ``exclusiveMinimum``,
``minLength``, ``maxLength``, ``pattern`` and ``oneOf``. The test suite checks that it
agrees with ``jsonschema`` on a corpus of malformed files.

:func:`first_error` returns the first problem as one line naming where it is
(``budget.max_steps``), what was expected and what was found, or None.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

from simworld._world.files import MAX_SCENARIO_FILE_BYTES, read_bounded
from simworld.errors import SimworldError

__all__ = ["first_error", "load_schema"]

_TYPES = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer",
          "number": "a number", "boolean": "true or false", "null": "null"}


def read_json_file(path: Any, error: type[SimworldError], what: str) -> Any:
    """The JSON in ``path`` (a task.json, a family.json), or ``error`` naming the file: missing, not a regular
    file, over :data:`~simworld._world.files.MAX_SCENARIO_FILE_BYTES`, or not JSON."""
    import orjson

    try:
        return orjson.loads(read_bounded(path, MAX_SCENARIO_FILE_BYTES, error, path.name))
    except OSError:
        raise error(f"{path}: not found; {what}.") from None
    except orjson.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc}).") from None


@functools.lru_cache(maxsize=8)
def load_schema(name: str) -> dict[str, Any]:
    """A schema shipped in ``simworld/schemas`` (e.g. ``task.schema.json``), parsed once."""
    shipped = Path(__file__).resolve().parents[1] / "schemas" / name
    if shipped.is_file():  # an installed or checked-out package: read it where it lies
        text = shipped.read_text(encoding="utf-8")
    else:  # a package served some other way (a zip): importlib.resources finds it (and costs ~5 ms to import)
        from importlib import resources

        text = resources.files("simworld").joinpath("schemas", name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _is(kind: str, value: Any) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    return isinstance(value, (int, float)) and math.isfinite(value)  # number


def _shown(value: Any) -> str:
    text = repr(value)
    return (text[:60] + "...") if len(text) > 60 else text


def _kind_of(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", int: "integer", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def first_error(value: Any, schema: dict[str, Any], where: str = "", root: str = "the top level") -> str | None:
    """The first way ``value`` breaks ``schema``, as ``where: expected ... but got ...``; None if it fits.

    ``root`` names the value itself in messages (``task.json``).
    """
    return _first(value, schema, where, root)


def _first(value: Any, schema: dict[str, Any], where: str, root: str) -> str | None:
    at = where or root
    if "oneOf" in schema:
        fits = [alt for alt in schema["oneOf"] if _first(value, alt, where, root) is None]
        if len(fits) == 1:
            pass
        elif not fits:
            same_type = [alt for alt in schema["oneOf"] if "type" in alt and _is(alt["type"], value)]
            if len(same_type) == 1:  # the form the value was meant to be: say what is wrong inside it
                return _first(value, same_type[0], where, root)
            forms = " or ".join(_describe(alt) for alt in schema["oneOf"])
            return f"{at}: expected {forms} but got {_shown(value)} ({_kind_of(value)})"
        else:
            return f"{at}: {_shown(value)} fits more than one form; the schema is ambiguous here"
    kind = schema.get("type")
    if kind is not None and not _is(kind, value):
        return f"{at}: expected {_TYPES[kind]} but got {_shown(value)} ({_kind_of(value)})"
    if "enum" in schema and value not in schema["enum"]:
        return f"{at}: {_shown(value)} is not allowed; allowed: {', '.join(map(str, schema['enum']))}"
    if isinstance(value, dict):
        return _object(value, schema, where, root)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{at}: expected at least {schema['minItems']} item(s) but got {len(value)}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{at}: expected at most {schema['maxItems']} item(s) but got {len(value)}"
        if "items" in schema:
            for i, item in enumerate(value):
                problem = _first(item, schema["items"], f"{where}[{i}]", root)
                if problem:
                    return problem
        return None
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"{at}: expected at least {schema['minLength']} character(s) but got {_shown(value)}"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{at}: expected at most {schema['maxLength']} characters but got {len(value)}"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            if "description" in schema:  # say what the pattern means, not the regular expression
                return f"{at}: {_shown(value)} is not {schema['description']}"
            return f"{at}: {_shown(value)} does not match the pattern {schema['pattern']}"
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{at}: expected a value >= {schema['minimum']} but got {_shown(value)}"
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            return f"{at}: expected a value > {schema['exclusiveMinimum']} but got {_shown(value)}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{at}: expected a value <= {schema['maximum']} but got {_shown(value)}"
    return None


def _object(value: dict[str, Any], schema: dict[str, Any], where: str, root: str) -> str | None:
    at = where or root
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            hint = f" ({schema['description']})" if "description" in schema else ""
            return f"{at}: missing required key {key!r}{hint}" if where else f"missing required key {key!r}{hint}"
    extra = schema.get("additionalProperties", True)
    if extra is False:
        unknown = sorted(k for k in value if k not in props)
        if unknown:
            return f"unknown key(s) {unknown!r} in {at}; allowed: {', '.join(props)}"
    if len(value) < schema.get("minProperties", 0):
        return f"{at}: expected at least {schema['minProperties']} key(s) but got none"
    for key, item in value.items():
        sub = props.get(key, extra if isinstance(extra, dict) else None)
        if sub is not None:
            problem = _first(item, sub, f"{where}.{key}" if where else str(key), root)
            if problem:
                return problem
    return None


def _describe(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    kind = schema.get("type")
    if kind == "object" and schema.get("required"):
        return f"an object with {', '.join(repr(k) for k in schema['required'])}"
    return _TYPES.get(str(kind), "a value of another form")
