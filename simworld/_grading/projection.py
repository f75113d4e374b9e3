"""The canonical projection: a state's records as ``path → value``, keyed by natural keys.

Graders compare states through this projection, never through generated ids: an
instalment is ``plans/PLAN/instalments/SEQ``, a payment is the n-th payment of its
plan (its id and idempotency key are the agent's choice, not a business fact), a
premium change is keyed by its policy and effective date, and a message, escalation,
information request or decline by the customer it is addressed to. Only the records a set
of states touched are projected, so a comparison costs what the episodes changed,
not the size of the world.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

import attrs

from simworld._world.models import BUSINESS_TABLES, COMMS_TABLES, canonical_json, field_names, memo, to_json
from simworld._world.money import Money
from simworld._world.state import State

__all__ = ["INSTALMENT_KEYS", "Projection", "compare", "diff", "group_key", "group_records", "instalment_path",
           "project", "projected_size", "record_paths", "same_records", "touched"]

Projection = dict[str, Any]

_BUSINESS = frozenset(BUSINESS_TABLES)
_COMMS = frozenset(COMMS_TABLES)
# Fields that are identifiers chosen by whoever created the record, not facts to grade.
_GENERATED = {"payments": {"id", "idempotency_key"}, "credits": {"id", "reason"}, "premium_changes": {"id"}}
# Records keyed by their parent and position rather than their id.
_BY_PARENT = {"payments": "plan_id", "credits": "plan_id"}


def _flatten(prefix: str, value: Any, out: Projection) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)):
                _flatten(f"{prefix}/{k}", v, out)
            else:  # most fields: a leaf, written here rather than by a call each
                out[f"{prefix}/{k}"] = v
    elif isinstance(value, list) and value and isinstance(value[0], (list, dict)):
        for i, v in enumerate(value):
            _flatten(f"{prefix}/{i}", v, out)
    else:
        out[prefix] = value


def group_key(state: State, table: str, rid: str) -> tuple[str, str]:
    """The key a record is projected under: its own id, or for payments and credits its plan's id."""
    if table in _BY_PARENT:
        return table, getattr(state.get(table, rid), _BY_PARENT[table])
    return table, rid


def group_records(state: State, table: str, key: str) -> tuple[Any, ...]:
    """The records projected under ``(table, key)`` in ``state`` (see :func:`group_key`): a payment's or credit's
    plan's payments or credits in order, else the one record (None when absent). The same objects in two states
    project the same paths."""
    if table in _BY_PARENT:
        return tuple(state.children(table, _BY_PARENT[table], key))
    return (state.get(table, key),)


def record_paths(state: State, table: str, key: str) -> Projection:
    """The projected paths of one record in ``state``; for payments and credits, ``key`` is the plan
    id and every payment (credit) of that plan is projected by its position.

    A record's paths depend on the record alone (and a payment's or credit's on its position),
    so each is computed once per record; the mapping returned is shared: read it, never change it.
    """
    if table in _BY_PARENT:
        out: Projection = {}
        for n, sibling in enumerate(state.children(table, _BY_PARENT[table], key)):
            prefix = f"{table}/{key}/{n}"
            for suffix, value in memo(sibling, "_paths_" + table, _sibling_paths):
                out[prefix + suffix] = value
        return out
    record = state.get(table, key)
    if record is None:
        return {}
    if key != record.id:  # a record filed under another id than its own: not the shared form
        return _own_paths(record, table, key)
    return memo(record, "_paths_" + table, lambda r: _own_paths(r, table, r.id))


#: An instalment's fields that are not projected under its path: its seq is in the path, its id is generated.
INSTALMENT_KEYS = ("seq", "id")


def instalment_path(plan_id: str, seq: Any) -> str:
    """Where instalment ``seq`` of plan ``plan_id`` is projected: its fields lie under this path."""
    return f"plans/{plan_id}/instalments/{seq}"


def _sibling_paths(record: Any) -> tuple[tuple[str, Any], ...]:
    """A payment's or credit's paths below its position, generated identifiers left out."""
    table = type(record).table
    out: Projection = {}
    _flatten("", {k: v for k, v in to_json(record).items() if k not in _GENERATED[table]}, out)
    return tuple(out.items())


def _own_paths(record: Any, table: str, rid: str) -> Projection:
    out: Projection = {}
    data = to_json(record)
    if table in _COMMS:
        # What the agent said is filed under whom it was said to ('-': nobody named), so a message to
        # another customer is a change outside the target like any other.
        _flatten(f"{table}/{data.get('customer_id') or '-'}/{rid}", data, out)
        return out
    if table == "plans":
        instalments = data.pop("instalments")
        for inst in instalments:
            seq = inst["seq"]
            for left_out in INSTALMENT_KEYS:
                del inst[left_out]
            prefix = instalment_path(rid, seq)
            for k, v in inst.items():  # _flatten's, written here: an instalment's fields are its leaves
                if isinstance(v, (dict, list)):
                    _flatten(f"{prefix}/{k}", v, out)
                else:
                    out[f"{prefix}/{k}"] = v
        _flatten(f"plans/{rid}", data, out)
        return out
    if table == "premium_changes":
        key = f"premium_changes/{data['policy_id']}/{data['effective_date']}"
        _flatten(key, {k: v for k, v in data.items() if k not in _GENERATED[table]}, out)
        return out
    _flatten(f"{table}/{rid}", data, out)
    return out


def touched(states: Iterable[State]) -> set[tuple[str, str]]:
    """The business record keys (see :func:`group_key`) any of ``states`` holds in its overlay."""
    keys: set[tuple[str, str]] = set()
    for s in states:
        for key, record in s.overlay.items():  # an overlay holds records, never None: what s.get gives
            table = key[0]
            if table in _BY_PARENT:  # group_key's, written here: most keys are their own
                keys.add((table, getattr(record, _BY_PARENT[table])))
            elif table in _BUSINESS:
                keys.add(key)
    return keys


def project(state: State, keys: Iterable[tuple[str, str]]) -> Projection:
    """The projection of the records ``keys`` in ``state`` (records absent there contribute nothing)."""
    out: Projection = {}
    for table, rid in sorted(keys):
        out.update(record_paths(state, table, rid))
    return out


def diff(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Field-level differences, sorted by path: ``{"path", "expected", "actual"}`` (None where absent)."""
    paths = sorted(set(expected) | set(actual))
    return [{"path": p, "expected": expected.get(p), "actual": actual.get(p)}
            for p in paths if expected.get(p) != actual.get(p)]


def compare(expected: State, actual: State, keys: Iterable[tuple[str, str]]) -> tuple[list[dict[str, Any]], int]:
    """``diff(project(expected, keys), project(actual, keys))`` and ``len(project(expected, keys))``, record by record.

    A record's paths all begin with its own key (``plans/PLAN/``, ``messages/CUSTOMER/ID/``, ...),
    so two keys never project the same path and each key can be compared on its own: records
    equal in both states (the same object, or the same canonical JSON) only count their
    fields, and only the paths of records that differ are compared. Premium changes are
    projected under their policy and date, which two records can share, so they are compared
    together, as are all keys when an id holds a ``/`` (a path of one key could then be another's).
    """
    keys = list(keys)
    if not all(_own_prefix(expected, actual, t, k) for t, k in keys):
        e, a = project(expected, keys), project(actual, keys)
        return diff(e, a), len(e)
    found: list[tuple[str, Any, Any]] = []
    size = 0
    shared = [key for key in keys if key[0] in _SHARED_PATHS]
    if shared:
        e, a = project(expected, shared), project(actual, shared)
        size += len(e)
        _differing(e, a, found)
    for table, key in keys:
        if table in _SHARED_PATHS:
            continue
        if _same_group(expected, actual, table, key):
            size += _size(expected, table, key)
            continue
        if table == "plans":
            counted = _plan_differing(expected.get(table, key), actual.get(table, key), key, found)
            if counted is not None:
                size += counted
                continue
        e = record_paths(expected, table, key)
        size += len(e)
        _differing(e, record_paths(actual, table, key), found)
    found.sort(key=_path)  # a path is in one key's records only: sorting the differences sorts them as diff() does
    return [{"path": p, "expected": x, "actual": y} for p, x, y in found], size


def _differing(expected: Projection, actual: Projection, found: list[tuple[str, Any, Any]]) -> None:
    """Append ``(path, expected, actual)`` for each path whose values differ (None where absent), in no order."""
    if expected is actual:
        return
    try:
        # Only a path in the symmetric difference of the items can differ: found by hashing, not path by path.
        paths: Iterable[str] = {p for p, _ in expected.items() ^ actual.items()}
    except TypeError:  # a value that is a list (a payment's allocations): compare every path
        paths = expected.keys() | actual.keys()
    for p in paths:
        x, y = expected.get(p), actual.get(p)
        if x != y:
            found.append((p, x, y))


def _plan_differing(expected: Any, actual: Any, key: str, found: list[tuple[str, Any, Any]]) -> int | None:
    """:func:`_differing` of two plans filed under their own id ``key``, field by field and instalment by instalment
    (each plan read once, kept on it: an episode's plan is compared with every solution's), appended to ``found``;
    the number of paths the expected plan projects. None, with nothing appended, where that does not hold (a plan
    missing, two instalments under one seq, a field that is not a plain value): then the projections are compared."""
    if expected is None or actual is None or expected.id != key or actual.id != key:
        return None
    mine, theirs = memo(expected, "_plan_parts", _plan_parts), memo(actual, "_plan_parts", _plan_parts)
    if mine is None or theirs is None:
        return None
    (own_e, by_seq_e), (own_a, by_seq_a) = mine, theirs
    _differing(own_e, own_a, found)
    for seq in by_seq_e.keys() | by_seq_a.keys():
        x, y = by_seq_e.get(seq, _NO_FIELDS), by_seq_a.get(seq, _NO_FIELDS)
        if x != y:
            where = instalment_path(key, seq)
            found.extend((f"{where}/{k}", x.get(k), y.get(k)) for k in x.keys() | y.keys() if x.get(k) != y.get(k))
    return _parts_size(mine)


#: The types of the values JSON reads back that are leaves (an object or an array is not).
_PLAIN_LEAVES = frozenset({str, int, float, bool, type(None)})
#: The fields of an instalment a plan does not have.
_NO_FIELDS: dict[str, Any] = {}


def _plan_parts(plan: Any) -> tuple[Projection, dict[int, dict[str, Any]]] | None:
    """A plan's projection in two parts: the paths of its own fields, and each instalment's projected fields by
    seq (its paths lie under :func:`instalment_path`); None when a seq repeats or is not an int, or an instalment's
    field is not a plain value (then :func:`_own_paths` is the projection)."""
    data = to_json(plan)
    by_seq: dict[int, dict[str, Any]] = {}
    for fields in data.pop("instalments"):
        seq = fields["seq"]
        for left_out in INSTALMENT_KEYS:
            del fields[left_out]
        if type(seq) is not int or seq in by_seq or not _PLAIN_LEAVES.issuperset(map(type, fields.values())):
            return None
        by_seq[seq] = fields
    own: Projection = {}
    _flatten(f"plans/{plan.id}", data, own)
    return own, by_seq


def _parts_size(parts: tuple[Projection, dict[int, dict[str, Any]]]) -> int:
    """How many paths a plan projects, from its :func:`_plan_parts` (each instalment field is one)."""
    own, by_seq = parts
    return len(own) + sum(map(len, by_seq.values()))


def _path(found: tuple[str, Any, Any]) -> str:
    return found[0]


def projected_size(state: State, keys: Iterable[tuple[str, str]]) -> int:
    """``len(project(state, keys))``: the number of fields the records ``keys`` project (see :func:`compare`)."""
    keys = list(keys)
    if not all(_own_prefix(state, state, t, k) for t, k in keys):
        return len(project(state, keys))
    shared = [key for key in keys if key[0] in _SHARED_PATHS]
    size = len(project(state, shared)) if shared else 0
    return size + sum(_size(state, t, k) for t, k in keys if t not in _SHARED_PATHS)


def _size(state: State, table: str, key: str) -> int:
    """``len(record_paths(state, table, key))``, each record's paths counted, not made: most records compared are
    the start's, the same in both states, and only their number of fields is wanted."""
    if table in _BY_PARENT:
        name = "_size_" + table
        return sum([memo(sibling, name, _sibling_size) for sibling in state.children(table, _BY_PARENT[table], key)])
    record = state.get(table, key)
    if record is None or key != record.id or table in _SHARED_PATHS:
        return len(record_paths(state, table, key))
    return memo(record, "_size_" + table, _own_size)


def _sibling_size(record: Any) -> int:
    """``len(_sibling_paths(record))``, counted."""
    paths = record.__dict__.get("_paths_" + record.table)
    if paths is not None:
        return len(paths)
    generated = _GENERATED[record.table]
    counted = _fields_leaves(record, generated)
    if counted is not None:
        return counted
    return sum([_leaves(v) for k, v in to_json(record).items() if k not in generated])


def _own_size(record: Any) -> int:
    """``len(_own_paths(record, table, record.id))``, counted: one path per leaf, as :func:`_flatten` writes them."""
    table = record.table
    paths = record.__dict__.get("_paths_" + table)
    if paths is not None:
        return len(paths)
    if table == "plans":
        parts = memo(record, "_plan_parts", _plan_parts)
        return len(_own_paths(record, table, record.id)) if parts is None else _parts_size(parts)
    counted = _fields_leaves(record, ())
    return _leaves(to_json(record)) if counted is None else counted


def _leaves(value: Any) -> int:
    """How many paths :func:`_flatten` writes for ``value`` (its field names never hold a ``/``: a record's own)."""
    if isinstance(value, dict):
        return sum([_leaves(v) if isinstance(v, (dict, list)) else 1 for v in value.values()])
    if isinstance(value, list) and value and isinstance(value[0], (list, dict)):
        return sum([_leaves(v) for v in value])
    return 1


def _fields_leaves(record: Any, left_out: Iterable[str]) -> int | None:
    """``_leaves`` of the record's JSON object without the fields ``left_out``, counted from the record's values
    (its JSON is not made); None when a field holds a value whose JSON this does not know (then count that JSON)."""
    total = 0
    for name in field_names(type(record)):
        if name in left_out:
            continue
        value = getattr(record, name)
        if type(value) in _LEAF_TYPES:  # most fields: one leaf, counted here rather than by a call each
            total += 1
            continue
        n = _value_leaves(value)
        if n is None:
            return None
        total += n
    return total


def _value_leaves(value: Any) -> int | None:
    """:func:`_leaves` of the JSON a record's field value is written as (see ``simworld._world.models._dump``): a
    string, a number, a boolean, null, an amount, a date or an instant is one leaf; a tuple is a list; a record is
    an object. None for any other value."""
    kind = type(value)
    if kind in _LEAF_TYPES or isinstance(value, _DATES):
        return 1
    if kind is tuple:
        if not value:
            return 1
        first = type(value[0])
        if first is not tuple and not attrs.has(first):  # a list of plain values: one leaf, as _flatten writes it
            return 1 if first in _LEAF_TYPES or isinstance(value[0], _DATES) else None
        total = 0
        for item in value:
            n = _value_leaves(item)
            if n is None:
                return None
            total += n
        return total
    if attrs.has(kind):
        return _fields_leaves(value, ())
    return None


#: Field values written as one JSON leaf (an amount as its decimal string); dates and instants too (:data:`_DATES`).
_LEAF_TYPES = frozenset({str, int, bool, float, type(None), Money})
_DATES = (date,)  # a datetime is a date


#: Tables whose records are projected under something other than their key (two records can share it).
_SHARED_PATHS = frozenset({"premium_changes"})


def _own_prefix(a: State, b: State, table: str, key: str) -> bool:
    """Whether the paths of the records under ``(table, key)`` in ``a`` and ``b`` begin with a prefix no other
    key's paths begin with: its key (and for a message its customer) holds no ``/``."""
    if "/" in key:
        return False
    if table in _COMMS:
        for state in (a, b):
            customer = getattr(state.get(table, key), "customer_id", None)
            if isinstance(customer, str) and "/" in customer:
                return False
    return True


def _same_group(a: State, b: State, table: str, key: str) -> bool:
    if table in _BY_PARENT:
        mine, theirs = a.children(table, _BY_PARENT[table], key), b.children(table, _BY_PARENT[table], key)
        return len(mine) == len(theirs) and all(map(_same, mine, theirs))
    return _same(a.get(table, key), b.get(table, key))


def _same(a: Any, b: Any) -> bool:
    return a is b or (a is not None and b is not None and canonical_json(a) == canonical_json(b))


def same_records(a: State, b: State, keys: Iterable[tuple[str, str]]) -> bool:
    """Whether ``a`` and ``b`` hold the same records, byte for byte, under every key (see :func:`group_key`).

    A projection is made of its records' fields alone, so then ``project(a, keys) ==
    project(b, keys)``: the answer without projecting (records shared between states, or
    whose canonical JSON was already made for a state hash, cost nothing). False says
    nothing: records that differ only in what a projection leaves out (generated ids) are
    equal projections all the same.
    """
    # A loop, not all() over a generator: most pairs differ at some key, and a generator left unfinished is closed by
    # raising GeneratorExit into it.
    for table, key in keys:  # noqa: SIM110
        if not _same_group(a, b, table, key):
            return False
    return True
