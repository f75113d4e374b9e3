"""What an agent's action may hold: JSON values within fixed limits, checked before anything else touches them.

An agent is untrusted input. A Python agent can return any object (an int of ten
thousand digits, which ``str()`` refuses; a dict that contains itself; a set; an
object whose ``__repr__`` raises) and a process or a model can send JSON that is
valid but absurd (a string of fifty megabytes, nesting a thousand levels deep).
:func:`plain_action` walks an action once, iteratively (so nothing it is given can
exhaust the stack), before the episode does anything else with it, and returns
either a plain copy of it (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``,
``None``) or a one-line message naming the problem and where it is::

    args.instalments[3].amount: an integer of 5000 digits; at most 40 digits

The episode hands that message back to the agent as an ``error`` result, so the
agent can fix its action and go on. The message never holds the offending value,
nor a ``repr`` of it: only its type, its size and its path.

Besides JSON's own types an action may hold what a Python agent naturally writes and
what orjson already serialised before these checks existed: ``tuple`` (as a list),
``Decimal`` (as its decimal text in plain notation, so an amount reaches the money parser exactly),
``date``, ``datetime``, ``time`` and ``UUID`` (as their ISO or hex text), enum members
(as their value) and subclasses of ``str``, ``int``, ``float``, ``dict`` and ``list``
(read through the base type, so an overridden method is never called). An integer
outside 64 bits is kept as its decimal text, as the event log has always recorded it.
"""

from __future__ import annotations

import datetime
import enum
import math
import uuid
from decimal import Decimal
from typing import Any

import attrs
import orjson

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_NODES", "MAX_STRING_CHARS", "MAX_TEXT_CHARS", "MAX_USAGE_TOKENS",
           "Refused", "check_action", "plain_action", "plain_value", "type_name", "usage_tokens"]

#: Containers nested inside one another, the action itself being the first. A real tool call
#: nests four deep (action, args, set_schedule's list of instalments, one instalment); orjson
#: refuses more than 255, and the observation and event-file envelopes add a few levels.
MAX_DEPTH = 32
#: Values in one action, counting containers and scalars alike. A set_schedule of 60
#: instalments (the most any tool takes) is about 200.
MAX_NODES = 10_000
#: Characters in one string or key. A message body or a summary is a few thousand at most.
MAX_STRING_CHARS = 100_000
#: Characters of text in one action, over every string and key: bounds what one action can
#: cost to record, hash and echo back in an error.
MAX_TEXT_CHARS = 1_000_000
#: Digits of one integer or Decimal. Money has at most 15 integer digits plus the currency's
#: decimals (the money parser names a larger amount itself); a 64-bit integer has 20 digits.
#: Python refuses ``str()`` of an integer past 4300 digits, so this must stay well below.
MAX_INT_DIGITS = 40
#: Tokens one action's ``usage`` may report per field: more than any model's reply, and small
#: enough that an episode's counters stay within the 64-bit integers a result line can hold.
MAX_USAGE_TOKENS = 10**9
#: The usage fields the episode's token counters add up.
USAGE_KEYS = ("input_tokens", "output_tokens")

_INT_LIMIT = 10**MAX_INT_DIGITS
# Held in a tuple, not as module attributes, so freezegun's module scan never swaps them.
_CLOCK_TYPES = (datetime.datetime, datetime.date, datetime.time)
_EXIT = object()  # stack marker: every value below this container has been walked
_TOO_MANY = f"more than {MAX_NODES} values in all; at most {MAX_NODES}"
_TOO_LONG = f"more than {MAX_TEXT_CHARS} characters of text in all, over every string and key; at most {MAX_TEXT_CHARS}"


@attrs.frozen
class Refused:
    """An action its transport already knows is unusable, with the problem to tell the agent.

    A ``cmd:`` agent's line that is valid JSON but that orjson will not read (nested past
    its depth limit, a number past a double) never becomes a value to check; the transport
    passes ``Refused(problem)`` instead, and the episode records it like any refused action.
    """

    problem: str


def check_action(action: Any) -> str | None:
    """None if ``action`` is plain JSON values within the limits, else a one-line message naming the problem."""
    return plain_action(action)[1]


def plain_action(action: Any) -> tuple[Any, str | None]:
    """``(plain copy of action, None)``, or ``(None, problem)`` when the action breaks a limit.

    Besides the limits on every value (see :func:`plain_value`), each of the action's
    ``usage`` token counts may be at most :data:`MAX_USAGE_TOKENS`.
    """
    if type(action) is Refused:
        return None, action.problem
    plain, problem = plain_value(action)
    if problem is not None:
        return None, problem
    if not isinstance(plain, dict):
        return plain, None
    # Read from the action itself (it passed the walk, so it is a real dict): in the plain copy a
    # count past 64 bits is already its decimal text. An enum member standing for the action has none.
    usage: Any = dict.get(action, "usage") if issubclass(type(action), dict) else plain.get("usage")
    if issubclass(type(usage), dict):
        for key in USAGE_KEYS:
            count = _count(dict.get(usage, key))
            if count is not None and count > MAX_USAGE_TOKENS:
                return None, f"usage.{key}: {count} tokens; at most {MAX_USAGE_TOKENS} per reply"
    return plain, None


def usage_tokens(action: Any) -> dict[str, int]:
    """The positive token counts in ``action["usage"]`` that are within the limit; anything else counts nothing.

    Safe on any object: it is also used for a refused action, whose reply still cost tokens.
    """
    usage: Any = dict.get(action, "usage") if issubclass(type(action), dict) else None
    if not issubclass(type(usage), dict):
        return {}
    counted = {}
    for key in USAGE_KEYS:
        count = _count(dict.get(usage, key))
        if count is not None and 0 < count <= MAX_USAGE_TOKENS:
            counted[key] = count
    return counted


def _count(value: Any) -> int | None:
    """``value`` as a plain int if it is an integer (not a bool), else None."""
    t = type(value)
    return int.__int__(value) if issubclass(t, int) and t is not bool else None


def plain_value(value: Any, root: str = "") -> tuple[Any, str | None]:
    """``(plain copy of value, None)``, or ``(None, problem)`` for a value an action may not hold.

    ``root`` names the value in the problem (``"args"`` gives ``args.plan_id: ...``); the
    empty default is an action, whose own problems read ``the action: ...``. The walk is
    iterative and stops at the first problem: a value that contains itself, nesting past
    :data:`MAX_DEPTH`, more than :data:`MAX_NODES` values or :data:`MAX_TEXT_CHARS` of text,
    a string past :data:`MAX_STRING_CHARS` or with a lone surrogate, an integer or Decimal
    past :data:`MAX_INT_DIGITS` digits, NaN or an infinity, a key that is not a string, or
    a value of any other type.
    """
    copy = _json_copy(value)
    if copy is not _NOT_COPIED:
        return copy, None
    try:
        return _quick(value, [_QUICK_NODES, _QUICK_TEXT], 0), None
    except Exception:  # _NotQuick, or a container mutated mid-copy: the careful walk reads it, or names why not
        pass
    try:
        return _walk(value, root)
    except Exception as exc:  # a container mutated mid-walk, a date whose tzinfo raises: refuse, never crash
        return None, f"{root or 'the action'}: could not be read ({type_name(exc)})"


def _json_copy(value: Any) -> Any:
    """A plain copy of ``value`` by a JSON round trip, when that is the copy :func:`_walk` makes: when orjson writes
    it with no subclass of a builtin, no date and no dataclass (each handed on: it raises), far inside every limit
    (few bytes, few brackets), and what it reads back equals ``value``. That leaves out what orjson writes as
    something else (NaN as null, a tuple as a list, a UUID or a plain enum member as text or its value); what it
    writes of an int or str enum member (its value) is what the walk makes of it. Else ``_NOT_COPIED``."""
    try:
        data = orjson.dumps(value, option=_AS_BUILTINS_ONLY)
    except TypeError:  # what orjson does not write, or hands on
        return _NOT_COPIED
    if len(data) > _JSON_BYTES or data.count(b"[") + data.count(b"{") > _JSON_LEVELS:
        return _NOT_COPIED
    copy = orjson.loads(data)
    try:
        same = copy == value
    except Exception:  # noqa: BLE001 - an enum member's own __eq__ that raises: the walk reads it
        return _NOT_COPIED
    return copy if same is True else _NOT_COPIED


_NOT_COPIED = object()
_AS_BUILTINS_ONLY = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
#: What the JSON copy takes: each value takes a byte at least, and each level a bracket, so a copy within these is
#: far inside :data:`MAX_NODES`, :data:`MAX_DEPTH`, :data:`MAX_STRING_CHARS` and :data:`MAX_TEXT_CHARS`.
_JSON_BYTES, _JSON_LEVELS = 4096, 16


class _NotQuick(Exception):
    """The value is not one :func:`_quick` copies: the careful walk reads it."""


# What the quick copy takes, far inside every limit: a value it copies, the careful walk copies the same.
_QUICK_NODES, _QUICK_TEXT, _QUICK_STRING, _QUICK_DEPTH = 256, 1 << 16, 1 << 12, 8


def _quick(v: Any, budget: list[int], depth: int) -> Any:
    """A plain copy of ``v`` when it is made of exact dicts, lists, ASCII strings, 64-bit ints, finite floats,
    bools and None, small and shallow (what nearly every action is); else raise _NotQuick.

    ``budget`` holds the values and the characters still allowed. A container's keys and its strings,
    integers, bools and Nones are read in its own loop, not by a call each (an action is mostly those);
    its characters are counted off the budget once, when it is done, so a value over the budget is
    still refused, only later.
    """
    t = type(v)
    if t is str:
        if len(v) > _QUICK_STRING or not v.isascii():
            raise _NotQuick
        budget[1] -= len(v)
        if budget[1] < 0:
            raise _NotQuick
        return v
    if t is dict or t is list:
        if depth >= _QUICK_DEPTH:
            raise _NotQuick
        budget[0] -= len(v)
        if budget[0] < 0:
            raise _NotQuick
        text = 0
        if t is list:
            items: list[Any] = []
            for x in v:
                tx = type(x)
                if tx is str:
                    if len(x) > _QUICK_STRING or not x.isascii():
                        raise _NotQuick
                    text += len(x)
                    items.append(x)
                elif (tx is int and -(2**63) <= x < 2**63) or tx is bool or x is None:
                    items.append(x)
                else:
                    items.append(_quick(x, budget, depth + 1))
            copy: Any = items
        else:
            copy = {}
            for key, x in v.items():
                if type(key) is not str or len(key) > _QUICK_STRING or not key.isascii():
                    raise _NotQuick
                text += len(key)
                tx = type(x)
                if tx is str:
                    if len(x) > _QUICK_STRING or not x.isascii():
                        raise _NotQuick
                    text += len(x)
                    copy[key] = x
                elif (tx is int and -(2**63) <= x < 2**63) or tx is bool or x is None:
                    copy[key] = x
                else:
                    copy[key] = _quick(x, budget, depth + 1)
        budget[1] -= text
        if budget[1] < 0:
            raise _NotQuick
        return copy
    if t is int:
        if not -(2**63) <= v < 2**63:
            raise _NotQuick
        return v
    if v is None or t is bool:
        return v
    if t is float and math.isfinite(v):
        return v
    raise _NotQuick


def _walk(value: Any, root: str) -> tuple[Any, str | None]:
    top: list[Any] = [None]
    # Each frame: (value, the container to put its copy in, the slot there, its path, its depth).
    # A path is (parent path, key or index), so it is only spelled out for a message.
    stack: list[Any] = [(value, top, 0, None, 0)]
    open_containers: set[int] = set()
    nodes, text = 1, 0  # values counted as they are scheduled, so a huge container is refused before it is copied
    while stack:
        frame = stack.pop()
        if frame[0] is _EXIT:
            open_containers.discard(frame[1])
            continue
        v, into, slot, path, depth = frame
        t = type(v)
        if v is None or t is bool:
            into[slot] = v
        elif issubclass(t, str):
            s = str.__str__(v)
            problem = _string_problem(s, "a string")
            if problem is not None:
                return None, _problem(root, path, problem)
            text += len(s)
            if text > MAX_TEXT_CHARS:
                return None, _problem(root, path, _TOO_LONG)
            into[slot] = s
        elif issubclass(t, int):
            n = int.__int__(v)
            if not -_INT_LIMIT < n < _INT_LIMIT:
                return None, _problem(root, path, f"an integer of {_digits(n)} digits; at most {MAX_INT_DIGITS} digits")
            # Beyond 64 bits orjson cannot write it: it is kept as its decimal text, as it always was.
            into[slot] = n if -(2**63) <= n < 2**64 else int.__repr__(n)
        elif issubclass(t, float):
            x = float.__float__(v)
            if not math.isfinite(x):
                return None, _problem(root, path, f"{x!r} is not a JSON number; send a finite number")
            into[slot] = x
        elif issubclass(t, Decimal):
            if not Decimal.is_finite(v):
                return None, _problem(root, path, "a Decimal that is not finite; send a finite amount")
            digits = len(Decimal.as_tuple(v).digits)
            if digits > MAX_INT_DIGITS:
                return None, _problem(root, path, f"a Decimal of {digits} digits; at most {MAX_INT_DIGITS} digits")
            # The decimal text reaches the money parser exactly, in plain notation (Decimal('1E+3') as
            # '1000', the form amounts are published in) unless that would be absurdly long.
            exp = Decimal.as_tuple(v).exponent
            plain = isinstance(exp, int) and exp >= -MAX_INT_DIGITS and Decimal.adjusted(v) < MAX_INT_DIGITS
            into[slot] = Decimal.__format__(v, "f") if plain else Decimal.__str__(v)
        elif issubclass(t, (dict, list, tuple)):
            if id(v) in open_containers:
                return None, _problem(root, path, "the value contains itself; JSON cannot hold a cycle")
            if depth + 1 > MAX_DEPTH:
                return None, _problem(root, path, f"nested more than {MAX_DEPTH} levels deep; at most {MAX_DEPTH}")
            size = dict.__len__(v) if issubclass(t, dict) else list.__len__(v) if issubclass(t, list) \
                else tuple.__len__(v)
            nodes += size
            if nodes > MAX_NODES:
                return None, _problem(root, path, _TOO_MANY)
            open_containers.add(id(v))
            stack.append((_EXIT, id(v)))
            copy: Any
            children: list[Any] = []
            if issubclass(t, dict):
                copy = {}
                for key, child in dict.items(v):
                    if not issubclass(type(key), str):
                        return None, _problem(root, path, f"a key of type {type_name(key)}; object keys must be "
                                                          "strings")
                    k = str.__str__(key)
                    problem = _string_problem(k, "a key")
                    if problem is not None:
                        return None, _problem(root, path, problem)
                    text += len(k)
                    if text > MAX_TEXT_CHARS:
                        return None, _problem(root, path, _TOO_LONG)
                    children.append((child, copy, k, (path, k), depth + 1))
            else:
                items = list.copy(v) if issubclass(t, list) else tuple.__getitem__(v, slice(None))
                copy = [None] * len(items)
                children = [(child, copy, i, (path, i), depth + 1) for i, child in enumerate(items)]
            into[slot] = copy
            stack.extend(reversed(children))  # popped in order, so a dict's copy keeps its key order
        elif issubclass(t, _CLOCK_TYPES):
            into[slot] = _iso(v)
        elif issubclass(t, uuid.UUID):
            into[slot] = uuid.UUID.__str__(v)
        elif issubclass(t, enum.Enum):
            nodes += 1  # so that even members whose values are each other end
            if nodes > MAX_NODES:
                return None, _problem(root, path, _TOO_MANY)
            stack.append((v._value_, into, slot, path, depth))  # a member is written as its value
        else:
            return None, _problem(root, path, f"a value of type {type_name(v)}; expected JSON values (object, "
                                              "array, string, number, true, false or null)")
    return top[0], None


def _string_problem(s: str, what: str) -> str | None:
    if len(s) > MAX_STRING_CHARS:
        return f"{what} of {len(s)} characters; at most {MAX_STRING_CHARS}"
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{what} with a lone surrogate at index {exc.start}; strings must be valid Unicode"
    return None


def _iso(value: Any) -> str:
    """The text orjson writes for a date, datetime or time (a subclass, such as freezegun's, by its base)."""
    try:
        text: str = orjson.loads(orjson.dumps(value))
    except TypeError:  # orjson takes no subclasses
        base = next(b for b in _CLOCK_TYPES if isinstance(value, b))
        text = base.isoformat(value)
    return text


def _digits(n: int) -> str:
    """How many decimal digits ``n`` has, without ``str()`` (which refuses past 4300 digits)."""
    n = abs(n)
    bits = n.bit_length()
    if bits > 1_000_000:  # counting exactly would cost more than the answer is worth
        return f"about {int(bits * math.log10(2))}"
    low = int((bits - 1) * math.log10(2)) + 1 if bits else 1  # the digits of 2**(bits-1)
    return str(low + 1 if n >= 10**low else low)


def type_name(value: Any) -> str:
    """The name of ``value``'s type, at most 60 characters; ``?`` if even that cannot be read."""
    try:
        name = type(value).__name__
    except Exception:
        return "?"
    return name[:60] if isinstance(name, str) else "?"


def _problem(root: str, path: Any, what: str) -> str:
    """``where: what``, the path spelt as ``args.instalments[3].amount`` (long paths elided in the middle)."""
    segments: list[str | int | None] = []
    while path is not None:
        path, segment = path
        segments.append(segment)
    segments.reverse()
    if len(segments) > 10:
        segments = [*segments[:5], None, *segments[-3:]]  # None: the elided middle
    where = root
    for segment in segments:
        if isinstance(segment, int):
            where += f"[{segment}]"
        elif segment is None:
            where += "…"
        elif segment.isidentifier() and len(segment) <= 40:
            where += f".{segment}" if where and not where.endswith("…") else segment
        else:
            shown = segment[:40] + ("…" if len(segment) > 40 else "")
            where += f"[{shown!r}]"
    return f"{where or 'the action'}: {what}"
