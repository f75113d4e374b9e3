"""The world state: shared immutable base records plus a small overlay of changes.

A snapshot is parsed once into a :class:`Base` (records, secondary indexes and
per-record digests) that every episode shares. A :class:`State` is that base plus
an overlay of the records an episode changed; every write returns a new State,
so the initial state, the state after each event and the final state all stay
readable for graders at the cost of the overlay alone, never of the world.

The state hash is a multiset hash: the sum, modulo 2**128, of a digest of every
record's canonical JSON. It does not depend on the order of writes: a state's sums
are the base's, minus the digest of each base record the overlay replaces, plus the
digest of each overlay record, so hashing costs what the episode changed, not the
size of the world. They are computed when first read (and kept), never on a write:
a state nobody hashes (a solver's scratch world) never digests a record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs
import orjson

from simworld._world.hashing import blake2b
from simworld._world.models import BUSINESS_TABLES, TABLES, canonical_json, memo

__all__ = ["Base", "State", "canonical_bytes", "record_digest"]

_MOD = 1 << 128
#: Marks, in a state's changes of a table by a field (see State._changes), the snapshot's records of a key as the
#: state holds them.
_REPLACED = object()
_BUSINESS = frozenset(BUSINESS_TABLES)
#: Foreign keys indexed at load: (table, field) pairs that tools look records up by.
INDEXED = (("policies", "customer_id"), ("plans", "policy_id"), ("fees", "plan_id"), ("payments", "plan_id"),
           ("credits", "plan_id"), ("premium_changes", "policy_id"))


def canonical_bytes(value: Any) -> bytes:
    """Canonical JSON bytes: orjson with sorted keys, no whitespace."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def record_digest(table: str, record: Any) -> int:
    """A 128-bit digest of one record in ``table``, as an int (computed once per record and table)."""
    key, compute = _DIGESTERS.get(table) or _digester(table)
    digest = record.__dict__.get(key)  # kept on the record, as memo keeps things (a miss costs no KeyError here)
    if digest is None:
        digest = compute(record)
        object.__setattr__(record, key, digest)
    return digest


def _digester(table: str) -> tuple[str, Callable[[Any], int]]:
    """The name a record keeps its digest in ``table`` under, and the function that computes it."""
    prefix = table.encode() + b"\0"

    def compute(record: Any) -> int:
        return int.from_bytes(blake2b(prefix + canonical_json(record), digest_size=16).digest(), "big")

    return "_digest_" + table, compute


#: Each table's digester, made once (see :func:`record_digest`).
_DIGESTERS = {table: _digester(table) for table in TABLES}


@attrs.frozen(eq=False, slots=False)  # a __dict__ holds what readers derive from the snapshot once (see memo)
class Base:
    """Immutable records of a snapshot, shared by every episode that starts from it."""

    tables: Mapping[str, Mapping[str, Any]]
    indexes: Mapping[tuple[str, str], Mapping[str, tuple[str, ...]]]
    digests: Mapping[tuple[str, str], int]
    business_sum: int
    comms_sum: int

    @classmethod
    def build(cls, tables: Mapping[str, Mapping[str, Any]]) -> Base:
        """Index and digest ``tables`` (table → id → record) once."""
        full = {t: dict(tables.get(t, {})) for t in TABLES}
        digests: dict[tuple[str, str], int] = {}
        sums = {True: 0, False: 0}
        for table, records in full.items():
            for rid, record in records.items():
                d = record_digest(table, record)
                digests[(table, rid)] = d
                sums[table in _BUSINESS] = (sums[table in _BUSINESS] + d) % _MOD
        indexes: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
        for table, field in INDEXED:
            index: dict[str, list[str]] = {}
            for rid, record in full[table].items():
                index.setdefault(getattr(record, field), []).append(rid)
            indexes[(table, field)] = {k: tuple(v) for k, v in index.items()}
        return cls(full, indexes, digests, sums[True], sums[False])


@attrs.frozen(eq=False, slots=False)  # a __dict__ holds the sums and the changes once found
class State:
    """A readable, immutable world state: a :class:`Base` plus an overlay of changes."""

    base: Base
    overlay: Mapping[tuple[str, str], Any] = attrs.field(factory=dict)

    @classmethod
    def of(cls, base: Base) -> State:
        """The state of ``base`` itself, with no changes."""
        return cls(base, {})

    def _sums(self) -> tuple[int, int]:
        """(business, communications) multiset sums, computed from the overlay once per state."""
        def compute(state: State) -> tuple[int, int]:
            base = state.base
            sums = {True: base.business_sum, False: base.comms_sum}
            for key, record in state.overlay.items():
                table = key[0]
                delta = record_digest(table, record) - base.digests.get(key, 0)
                sums[table in _BUSINESS] = (sums[table in _BUSINESS] + delta) % _MOD
            return sums[True], sums[False]

        return memo(self, "_sums_cache", compute)

    @property
    def business_sum(self) -> int:
        """The multiset sum of the business tables' record digests."""
        return self._sums()[0]

    @property
    def comms_sum(self) -> int:
        """The multiset sum of the communication tables' record digests."""
        return self._sums()[1]

    def get(self, table: str, rid: str) -> Any:
        """The record ``rid`` of ``table``, or None."""
        record = self.overlay.get((table, rid))
        if record is not None:  # the overlay holds records, never None
            return record
        return self.base.tables[table].get(rid)

    def records(self, table: str) -> Iterator[Any]:
        """Every record of ``table``: the snapshot's in file order, then new ones in creation order."""
        base = self.base.tables[table]
        overlay = self.overlay
        for rid, record in base.items():
            yield overlay.get((table, rid), record)
        for (t, rid), record in overlay.items():
            if t == table and rid not in base:
                yield record

    def count(self, table: str) -> int:
        """The number of records in ``table``."""
        base = self.base.tables[table]
        return len(base) + sum(1 for (t, rid) in self.overlay if t == table and rid not in base)

    def children(self, table: str, field: str, key: str) -> list[Any]:
        """Records of ``table`` whose ``field`` equals ``key``, through the load-time index: the snapshot's in
        file order, then new ones in creation order. A fresh list, the caller's own."""
        ids = self.base.indexes[(table, field)].get(key, ())
        base = self.base.tables[table]
        if not self.overlay:
            return [base[rid] for rid in ids]
        replaces, added = self._changes(table, field)
        if replaces:
            # Found once per state and key (a state never changes): tools and graders ask a state for a plan's
            # payments again and again, and each look-up would make a key of every id.
            kept = added.get((_REPLACED, key))
            if kept is None:
                overlay = self.overlay
                kept = added[(_REPLACED, key)] = [overlay.get((table, rid)) or base[rid] for rid in ids]
            found = list(kept)
        else:
            found = [base[rid] for rid in ids]
        more = added.get(key)
        if more:
            found += more
        return found

    def _changes(self, table: str, field: str) -> tuple[bool, dict[Any, list[Any]]]:
        """Whether the overlay replaces any of the snapshot's records of ``table``, and the records it adds to it
        by their ``field``: found once per state and field, since a state never changes."""
        # A state made by writes to other tables holds this table's records as the earlier state does, and so has its
        # answer: walked back (not recursed: a tool may write a record at a time, thousands deep) to a state that
        # knows it or wrote the table, and kept on every state on the way.
        state, passed = self, []
        while True:
            cache = state._answers()
            changes = cache.get((table, field))
            if changes is not None:
                break
            made = state.__dict__.get("_made_from")
            if made is None or table in made[1]:
                changes = cache[(table, field)] = state._changes_here(cache, table, field)
                break
            passed.append(cache)
            state = made[0]
        for cache in passed:
            cache[(table, field)] = changes
        return changes

    def _answers(self) -> dict[Any, Any]:
        """This state's answers of :meth:`_changes`, by (table, field), and what its overlay holds by table (None)."""
        cache: dict[Any, Any] | None = self.__dict__.get("_changes_cache")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_changes_cache", cache)
        return cache

    def _changes_here(self, cache: dict[Any, Any], table: str, field: str) -> tuple[bool, dict[Any, list[Any]]]:
        """:meth:`_changes` read from this state's own overlay."""
        # Per table: whether the overlay replaces one of its records, then the records it adds to it.
        tables: dict[str, list[Any]] | None = cache.get(None)
        if tables is None:  # the overlay read once for every table
            tables = cache[None] = {}
            base = self.base.tables
            for (t, rid), record in self.overlay.items():
                held = tables.get(t)
                if held is None:
                    held = tables[t] = [False]
                if rid in base[t]:
                    held[0] = True
                else:
                    held.append(record)
        held = tables.get(table)
        added: dict[Any, list[Any]] = {}
        if held is not None:
            for record in held[1:]:
                added.setdefault(getattr(record, field), []).append(record)
        return held is not None and held[0], added

    def put(self, record: Any) -> State:
        """Return a new state in which ``record`` replaces the record with its id (or is added)."""
        overlay = dict(self.overlay)
        table = type(record).table
        overlay[(table, record.id)] = record
        return self._made(overlay, (table,))

    def put_all(self, records: Iterable[Any]) -> State:
        """Return a new state in which each of ``records`` is put in turn (as :meth:`put` would, in one copy)."""
        overlay = dict(self.overlay)
        tables = set()
        for record in records:
            table = type(record).table
            tables.add(table)
            overlay[(table, record.id)] = record
        return self._made(overlay, tables)

    def _made(self, overlay: dict[tuple[str, str], Any], tables: Iterable[str]) -> State:
        """A state of this one's base with ``overlay``, made from this one by writes to ``tables`` alone: what it
        holds of any other table is this one's (see :meth:`_changes`)."""
        made = State(self.base, overlay)
        object.__setattr__(made, "_made_from", (self, tables))
        return made

    @property
    def business_hash(self) -> str:
        """Hash of the business tables only (customers, policies, plans, payments, fees, credits, changes)."""
        return f"{self.business_sum:032x}"

    @property
    def hash(self) -> str:
        """Canonical hash of the whole state, business and communications (made once per state: an episode's
        result line, its event file's header and footer all read them)."""
        def compute(state: State) -> str:
            business, comms = state._sums()
            return blake2b(f"{business:032x}:{comms:032x}".encode(), digest_size=16).hexdigest()

        return memo(self, "_hash_cache", compute)

    def changed(self) -> list[tuple[str, str]]:
        """The (table, id) keys this state changed or added relative to its base, sorted."""
        return sorted(self.overlay)
