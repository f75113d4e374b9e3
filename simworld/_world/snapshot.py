"""Snapshots: world states on disk as canonical JSON, parsed once per process.

A snapshot file holds the clock, the policy store and one list per table::

    {"format": "simworld.snapshot/1", "clock": "2026-03-10T09:00:00Z",
     "policy_store": {...}, "customers": [...], "policies": [...], "plans": [...],
     "payments": [...], "fees": [...], "credits": [], "premium_changes": [],
     "messages": [], "escalations": [], "info_requests": []}

:class:`SnapshotLoader` parses each file once and hands every episode the same
immutable :class:`Snapshot`; a reset never re-parses or deep-copies the world.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import orjson

from simworld._world.clock import parse_instant
from simworld._world.files import MAX_SNAPSHOT_BYTES, read_bounded
from simworld._world.hashing import blake2b
from simworld._world.models import TABLES, record_from_json, to_json
from simworld._world.policy import DEFAULT_POLICY, PolicyStore
from simworld._world.state import Base, State, canonical_bytes
from simworld.errors import SimworldError, SnapshotError

__all__ = ["FORMAT", "Snapshot", "SnapshotLoader", "dump_snapshot"]

FORMAT = "simworld.snapshot/1"


@attrs.frozen(eq=False)
class Snapshot:
    """A parsed snapshot: its name, clock, policy store and shared base records."""

    name: str
    clock: datetime
    policy: PolicyStore
    base: Base
    #: blake2b of the file's bytes: which world a run used, for run.json and ``--resume``.
    digest: str = ""

    def state(self) -> State:
        """The snapshot's state with no changes."""
        return State.of(self.base)

    @classmethod
    def from_json(cls, data: Any, name: str) -> Snapshot:
        """Build a snapshot from parsed JSON, naming ``name`` in every error."""
        if not isinstance(data, dict):
            raise SnapshotError(f"{name}: expected a JSON object at the top level.")
        allowed = {"format", "clock", "policy_store", *TABLES}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise SnapshotError(f"{name}: unknown keys {unknown!r}; allowed: {sorted(allowed)!r}.")
        if data.get("format") != FORMAT:
            raise SnapshotError(f"{name}: format is {data.get('format')!r}; expected {FORMAT!r}.")
        try:
            clock = parse_instant(data.get("clock"))  # type: ignore[arg-type]
        except SimworldError as exc:
            raise SnapshotError(f"{name}: clock: {exc}") from None
        policy = PolicyStore.from_json(data.get("policy_store", DEFAULT_POLICY), f"{name}: policy_store")
        tables: dict[str, dict[str, Any]] = {}
        for table in TABLES:
            rows = data.get(table, [])
            if not isinstance(rows, list):
                raise SnapshotError(f"{name}: {table} must be a list but got {type(rows).__name__}.")
            records: dict[str, Any] = {}
            for i, row in enumerate(rows):
                record = record_from_json(table, row, f"{name}: {table}[{i}]")
                if record.id in records:
                    raise SnapshotError(f"{name}: {table}[{i}] repeats id {record.id!r}; ids must be unique.")
                records[record.id] = record
            tables[table] = records
        for table, field, parent in _REFERENCES:
            for i, record in enumerate(tables[table].values()):
                ref = getattr(record, field)
                if ref and ref not in tables[parent]:
                    raise SnapshotError(f"{name}: {table}[{i}] ({record.id!r}) has {field}={ref!r}, which is not in "
                                        f"{parent}; add that record or fix the reference.")
        return cls(name, clock, policy, Base.build(tables))


def dump_snapshot(state: State, clock: datetime, policy: PolicyStore) -> bytes:
    """Canonical JSON bytes of a state as a snapshot file (sorted keys, one trailing newline)."""
    from simworld._world.clock import format_instant

    data: dict[str, Any] = {"format": FORMAT, "clock": format_instant(clock), "policy_store": policy.to_json()}
    for table in TABLES:
        data[table] = [to_json(r) for r in state.records(table)]
    return canonical_bytes(data) + b"\n"


#: (table, field, table it points into): every reference a snapshot's records make must resolve.
_REFERENCES = (("policies", "customer_id", "customers"), ("plans", "policy_id", "policies"),
               ("fees", "plan_id", "plans"), ("payments", "plan_id", "plans"), ("credits", "plan_id", "plans"),
               ("premium_changes", "policy_id", "policies"))


class SnapshotLoader:
    """Parses each snapshot file once and shares the result."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, int], Snapshot] = {}

    def load(self, path: Path) -> Snapshot:
        """The snapshot at ``path``, parsed at most once while the file is unchanged."""
        try:
            stat = path.stat()
        except OSError:
            raise SnapshotError(f"Snapshot file {str(path)!r} not found; check the task's 'snapshot' key.") from None
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        cached = self._cache.get(key)
        if cached is None:
            try:
                raw = read_bounded(path, MAX_SNAPSHOT_BYTES, SnapshotError, "a snapshot")
            except OSError as exc:
                raise SnapshotError(f"{path}: cannot read this snapshot ({exc.strerror or exc}); check the "
                                    "file and its permissions.") from None
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise SnapshotError(f"{path.name}: not valid JSON: {exc}") from None
            cached = attrs.evolve(Snapshot.from_json(data, path.name),
                                  digest=blake2b(raw, digest_size=16).hexdigest())
            self._cache[key] = cached
        return cached
