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
from typing import Any

from simworld._world.models import BUSINESS_TABLES, COMMS_TABLES, canonical_json, memo, to_json
from simworld._world.state import State

__all__ = ["Projection", "diff", "group_key", "group_records", "project", "record_paths", "same_records", "touched"]

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
            _flatten(f"{prefix}/{k}", v, out)
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
            seq = inst.pop("seq")
            inst.pop("id")
            _flatten(f"plans/{rid}/instalments/{seq}", inst, out)
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
        keys.update(group_key(s, *k) for k in s.overlay if k[0] in _BUSINESS)
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
    for table, key in keys:
        if table in _BY_PARENT:
            mine, theirs = a.children(table, _BY_PARENT[table], key), b.children(table, _BY_PARENT[table], key)
            if len(mine) != len(theirs) or not all(map(_same, mine, theirs)):
                return False
        elif not _same(a.get(table, key), b.get(table, key)):
            return False
    return True
