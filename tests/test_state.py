"""The state: shared base, copy-on-write overlay, and an incremental canonical hash."""

from __future__ import annotations

from datetime import UTC, date
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simworld._world.money import Money
from simworld._world.snapshot import Snapshot, SnapshotLoader, dump_snapshot
from simworld._world.state import Base, State

SMALL = Path(__file__).resolve().parent.parent / "snapshots" / "small.json"


def _snap() -> Snapshot:
    return SnapshotLoader().load(SMALL)


def _full_hash(state: State) -> tuple[str, str]:
    """Recompute the hashes from scratch, the slow way."""
    tables = {t: {r.id: r for r in state.records(t)} for t in state.base.tables}
    fresh = State.of(Base.build(tables))
    return fresh.hash, fresh.business_hash


class TestHash:
    @settings(max_examples=50, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(["pln_001", "pln_002", "pln_009"]), st.integers(1, 12),
                              st.integers(0, 10**6)), max_size=8))
    def test_incremental_equals_recomputed(self, edits) -> None:
        """After any sequence of writes the incremental hash equals one recomputed from the whole state."""
        state = _snap().state()
        for plan_id, seq, minor in edits:
            plan = state.get("plans", plan_id)
            insts = tuple(attrs.evolve(i, amount=Money(minor, plan.currency)) if i.seq == seq else i
                          for i in plan.instalments)
            state = state.put(attrs.evolve(plan, instalments=insts))
        assert (state.hash, state.business_hash) == _full_hash(state)

    def test_order_independent(self) -> None:
        """Two writes in either order give the same hash."""
        s = _snap().state()
        a = s.get("customers", "cus_001")
        b = s.get("customers", "cus_002")
        a2, b2 = attrs.evolve(a, notes="x"), attrs.evolve(b, notes="y")
        assert s.put(a2).put(b2).hash == s.put(b2).put(a2).hash

    def test_undo_restores_hash(self) -> None:
        """Writing a record back to its old value restores the original hash."""
        s = _snap().state()
        a = s.get("customers", "cus_001")
        changed = s.put(attrs.evolve(a, notes="changed"))
        assert changed.hash != s.hash
        assert changed.put(a).hash == s.hash

    def test_comms_do_not_change_business_hash(self) -> None:
        """A message changes the state hash but not the business hash."""
        from datetime import datetime

        from simworld._world.models import Message

        s = _snap().state()
        t = s.put(Message("m1", "cus_001", "hi", "body", datetime(2026, 1, 1, tzinfo=UTC)))
        assert t.business_hash == s.business_hash and t.hash != s.hash


class TestSharing:
    def test_put_all_is_puts_in_turn(self) -> None:
        """put_all gives the state successive puts give: the same records, in the same order, and the same hash."""
        s = _snap().state()
        a, b = s.get("customers", "cus_001"), s.get("customers", "cus_002")
        records = [attrs.evolve(b, notes="1"), attrs.evolve(a, notes="2"), attrs.evolve(b, notes="3")]
        one_by_one = s
        for record in records:
            one_by_one = one_by_one.put(record)
        together = s.put_all(records)
        assert list(together.overlay.items()) == list(one_by_one.overlay.items())
        assert together.hash == one_by_one.hash and s.overlay == {}

    def test_reset_shares_the_base(self) -> None:
        """Every state of a snapshot shares one base: nothing is copied or re-parsed per episode."""
        loader = SnapshotLoader()
        snap = loader.load(SMALL)
        assert loader.load(SMALL) is snap
        s1, s2 = snap.state(), snap.state()
        assert s1.base is s2.base and s1.overlay == {} and s2.overlay == {}

    def test_put_copies_only_the_overlay(self) -> None:
        """A write leaves the earlier state unchanged and the base untouched."""
        s = _snap().state()
        a = s.get("customers", "cus_001")
        t = s.put(attrs.evolve(a, notes="n"))
        assert s.get("customers", "cus_001").notes == a.notes
        assert t.get("customers", "cus_001").notes == "n"
        assert t.base is s.base and len(t.overlay) == 1


def _children_slowly(state: State, table: str, field: str, key: str) -> list:
    """children() the slow way: the snapshot's records by their field at load, then the new ones in order."""
    base = state.base.tables[table]
    ids = [rid for rid, r in base.items() if getattr(r, field) == key]
    ids += [rid for (t, rid), r in state.overlay.items() if t == table and rid not in base and getattr(r, field) == key]
    return [state.get(table, rid) for rid in ids]


class TestChildren:
    PLANS = ["pln_001", "pln_002", "pln_006", "pln_020", "pln_404"]

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(["new fee", "change fee", "new credit", "fee and credit"]),
                              st.sampled_from(PLANS), st.integers(0, 3)), max_size=10))
    def test_children_equal_a_full_scan(self, writes) -> None:
        """After any writes, children() gives the records a full scan gives, in the same order, for every state."""
        from simworld._world.models import Credit, Fee

        state = _snap().state()
        states = [state]
        for kind, plan_id, n in writes:
            if kind == "change fee":
                fee = state.get("fees", ["fee_006", "fee_007", "fee_020a", "fee_020b"][n])
                state = state.put(attrs.evolve(fee, amount=Money(fee.amount.minor + 1, fee.currency)))
            elif kind == "new fee":
                state = state.put(Fee(f"fee-new-{n}", plan_id, "USD", "late", Money(100 + n, "USD"), "open",
                                      state.get("fees", "fee_006").charged_on))
            elif kind == "new credit":
                state = state.put(Credit(f"cr-new-{n}", plan_id, "USD", Money(n, "USD"), "test"))
            else:  # two tables in one write
                state = state.put_all([Credit(f"cr-two-{n}", plan_id, "USD", Money(n, "USD"), "test"),
                                       Fee(f"fee-two-{n}", plan_id, "USD", "late", Money(5 + n, "USD"), "open",
                                           state.get("fees", "fee_006").charged_on)])
            states.append(state)
            if n % 2:  # asked now, before the states after it are (an answer a later state reuses)
                state.children("payments", "plan_id", plan_id)
        for s in states:
            for table in ("fees", "credits", "payments"):
                for plan_id in self.PLANS:
                    assert s.children(table, "plan_id", plan_id) == _children_slowly(s, table, "plan_id", plan_id)

    def test_answer_is_the_callers_own(self) -> None:
        """A caller may change the list children() returns without changing the next answer."""
        s = _snap().state()
        first = s.children("payments", "plan_id", "pln_001")
        assert first
        first.clear()
        assert s.children("payments", "plan_id", "pln_001") == _children_slowly(s, "payments", "plan_id", "pln_001")


class TestRecordJson:
    @settings(max_examples=100, deadline=None)
    @given(st.text(max_size=12), st.integers(-(2**63), 2**63 - 1), st.dates(), st.dates(),
           st.integers(-(10**20), 10**20), st.integers(-(10**6), 10**6), st.sampled_from(["USD", "JPY", "KWD"]),
           st.sampled_from(["planned", "paid", "waived"]))
    def test_instalment_written_out_as_the_generic_encoder_would(self, rid, seq, due, draft, amount, paid,
                                                                  currency, status) -> None:
        """An instalment's JSON and canonical JSON are what the generic per-field encoder gives, whatever it holds."""
        import orjson

        from simworld._world.models import Instalment, _dump, canonical_json, field_names, json_bytes

        inst = Instalment(rid, seq, due, Money(amount, currency), Money(paid, currency), status, draft)
        generic = {name: _dump(getattr(inst, name))[0] for name in field_names(Instalment)}
        assert json_bytes(inst) == orjson.dumps(generic)
        assert canonical_json(inst) == orjson.dumps(generic, option=orjson.OPT_SORT_KEYS)

    def test_plan_embeds_its_instalments(self) -> None:
        """A plan's JSON holds its instalments' JSON, its canonical JSON their canonical JSON, keys sorted."""
        import orjson

        from simworld._world.models import canonical_json, json_bytes

        plan = _snap().state().get("plans", "pln_001")
        plain, canonical = orjson.loads(json_bytes(plan)), orjson.loads(canonical_json(plan))
        assert plain == canonical and list(plain) == [f.name for f in attrs.fields(type(plan))]
        assert canonical_json(plan) == orjson.dumps(plain, option=orjson.OPT_SORT_KEYS)
        assert plain["instalments"][0] == orjson.loads(json_bytes(plan.instalments[0]))
        # The instalments embedded as one joined fragment are the bytes a list of their own fragments gives.
        fields = {f.name: getattr(plan, f.name) for f in attrs.fields(type(plan))}
        listed = {**fields, "instalments": [orjson.Fragment(json_bytes(i)) for i in plan.instalments]}
        assert json_bytes(plan) == orjson.dumps(listed, default=str)


class TestCompiledEncoders:
    """Each record class's compiled encoder gives the generic per-field encoder's bytes, or leaves the record to it."""

    @staticmethod
    def _both(record: object) -> tuple[object, tuple[bytes, bytes]]:
        from simworld._world.models import _encoded_generic, _encoder

        return _encoder(type(record))(record), _encoded_generic(record)

    def test_every_record_of_the_snapshot(self) -> None:
        """Every record (and instalment) of the small snapshot is encoded by its class's encoder, as generically."""
        from simworld._world.models import TABLES

        state, seen = _snap().state(), 0
        for table in TABLES:
            for record in state.records(table):
                for r in (record, *getattr(record, "instalments", ())):
                    compiled, generic = self._both(r)
                    assert compiled == generic, r
                    seen += 1
        assert seen > 100

    def test_canonical_json_alone_is_the_canonical_json_of_both(self) -> None:
        """A record whose canonical JSON is asked for first (a payment, a policy, a customer) gets the canonical
        bytes the encoder of both gives, and its JSON, asked for later, is the JSON of both."""
        import attrs as attrs_

        from simworld._world.models import _HASHED_FIRST, TABLES, _encoded_generic, _encoder, canonical_json, json_bytes

        seen = set()
        for table in TABLES:
            for record in _snap().state().records(table):
                if type(record) not in _HASHED_FIRST:
                    continue
                fresh = attrs_.evolve(record)  # nothing cached on it yet
                assert _encoder(type(record), canonical_only=True)(record) == _encoded_generic(record)[1]
                assert canonical_json(fresh) == _encoded_generic(record)[1]
                assert "_json_bytes" not in fresh.__dict__
                assert json_bytes(fresh) == _encoded_generic(record)[0]
                assert canonical_json(fresh) == _encoded_generic(record)[1]
                seen.add(type(record))
        assert seen == set(_HASHED_FIRST)

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.tuples(st.one_of(st.integers(-5, 99), st.booleans()),
                              st.one_of(st.integers(-(10**12), 10**12).map(lambda m: Money(m, "USD")),
                                        st.integers(0, 10**6).map(lambda m: Money(m, "KWD")), st.none())),
                    max_size=4).map(tuple) | st.just([(1, "5.00")]) | st.just(((1, 2, 3),)))
    def test_allocations_written_as_the_generic_encoder_would(self, allocations) -> None:
        """A payment's allocations, written out, are what the generic per-field encoder writes, whatever they hold."""
        import orjson

        from simworld._world.models import _allocations, _dump

        fast, generic = _allocations(allocations), _dump(allocations)
        assert orjson.dumps(fast[0]) == orjson.dumps(generic[0])
        assert orjson.dumps(fast[1]) == orjson.dumps(generic[1])

    def test_optional_fields_set_and_unset(self) -> None:
        """A cancelled policy (a date and an amount in its optional fields) and an active one encode alike."""
        from datetime import date

        policy = _snap().state().get("policies", "pol_001")
        cancelled = attrs.evolve(policy, status="cancelled", cancelled_on=date(2026, 4, 20),
                                 refund=Money(5205, policy.currency))
        for p in (policy, cancelled):
            compiled, generic = self._both(p)
            assert compiled == generic
        assert b'"refund":"52.05"' in self._both(cancelled)[1][0]

    def test_freezeguns_dates_are_dates(self) -> None:
        """Records made while a TimeGuard runs hold freezegun's date class: encoded as dates, by the encoder."""
        from freezegun.api import FakeDate

        plan = _snap().state().get("plans", "pln_001")
        faked = attrs.evolve(plan, instalments=tuple(
            attrs.evolve(i, due_date=FakeDate.fromordinal(i.due_date.toordinal()),
                         draft_date=FakeDate.fromordinal(i.draft_date.toordinal())) for i in plan.instalments))
        compiled, generic = self._both(faked.instalments[0])
        assert compiled is not None and compiled == generic
        compiled, generic = self._both(faked)
        assert compiled == generic

    def test_a_value_of_another_type_goes_to_the_generic_encoder(self) -> None:
        """A datetime where a date is declared is not the encoder's: it returns None and _encoded writes an instant."""
        from datetime import datetime

        from simworld._world.models import json_bytes

        inst = _snap().state().get("plans", "pln_001").instalments[0]
        odd = attrs.evolve(inst, due_date=datetime(2026, 1, 1, 9, 30, tzinfo=UTC))
        compiled, generic = self._both(odd)
        assert compiled is None
        assert json_bytes(odd) == generic[0] and b'"due_date":"2026-01-01T09:30:00.000Z"' in generic[0]


class TestSnapshotRoundTrip:
    def test_dump_is_canonical(self) -> None:
        """Loading small.json and dumping it again gives the same bytes."""
        snap = _snap()
        assert dump_snapshot(snap.state(), snap.clock, snap.policy) == SMALL.read_bytes()

    def test_malformed_snapshot_names_the_problem(self, tmp_path: Path) -> None:
        """A snapshot with an unknown key fails at load naming the file, the record and the key."""
        import orjson
        import pytest

        from simworld.errors import SnapshotError

        data = orjson.loads(SMALL.read_bytes())
        data["customers"][0]["shoe_size"] = 9
        bad = tmp_path / "bad.json"
        bad.write_bytes(orjson.dumps(data))
        with pytest.raises(SnapshotError, match=r"bad.json: customers\[0\].*shoe_size"):
            SnapshotLoader().load(bad)


def test_a_state_thousands_of_writes_deep_answers_children() -> None:
    """A state made by thousands of one-record writes (a tool writing a record at a time) still answers children()
    for a table it never wrote, as a full scan does, without recursing down the chain."""
    from simworld._world.models import Credit

    state = _snap().state()
    for i in range(5000):
        state = state.put(Credit(f"cr-deep-{i}", "pln_001", "USD", Money(1, "USD"), "test"))
    assert state.children("payments", "plan_id", "pln_001") == _children_slowly(state, "payments", "plan_id",
                                                                                "pln_001")
    assert len(state.children("credits", "plan_id", "pln_001")) == len(
        _children_slowly(state, "credits", "plan_id", "pln_001"))


class TestRemade:
    """models.remade, the records' own attrs.evolve: the same record, and the same refusal of a field that is none."""

    @settings(max_examples=200, deadline=None)
    @given(data=st.data())
    def test_every_record_remade_with_any_of_its_fields_is_what_evolve_makes(self, data: st.DataObject) -> None:
        from simworld._world.models import json_bytes, remade

        state = _snap().state()
        table = data.draw(st.sampled_from(sorted(t for t in state.base.tables if state.base.tables[t])))
        record = data.draw(st.sampled_from(sorted(state.base.tables[table].values(), key=lambda r: r.id)))
        other = data.draw(st.sampled_from(sorted(state.base.tables[table].values(), key=lambda r: r.id)))
        names = [f.name for f in attrs.fields(type(record))]
        changed = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
        changes = {name: getattr(other, name) for name in changed}
        made, evolved = remade(record, **changes), attrs.evolve(record, **changes)
        assert type(made) is type(evolved) and json_bytes(made) == json_bytes(evolved)
        assert all(getattr(made, n) == getattr(evolved, n) for n in names)

    def test_a_change_that_names_no_field_is_refused(self) -> None:
        from simworld._world.models import remade

        plan = _snap().state().get("plans", "pln_001")
        with pytest.raises(TypeError, match="instalmnts"):
            remade(plan, instalmnts=())
        with pytest.raises(TypeError):
            attrs.evolve(plan, instalmnts=())


class TestMemo:
    """What is derived from a record is kept on it, computed once per record and key, whatever its value."""

    @pytest.mark.parametrize("value", [None, 0, "", (), {"k": 1}])
    def test_each_value_is_computed_once(self, value: object) -> None:
        from simworld._world.models import Instalment, memo

        record = Instalment("i", 1, date(2026, 1, 1), Money(1, "USD"), Money(0, "USD"), "scheduled",
                            date(2026, 1, 1))
        calls: list[object] = []

        def compute(r: object) -> object:
            calls.append(r)
            return value

        assert memo(record, "_test_memo", compute) is value
        assert memo(record, "_test_memo", compute) is value
        assert calls == [record]
        other = attrs.evolve(record, seq=2)  # another record: computed for it too
        assert memo(other, "_test_memo", compute) is value and calls == [record, other]
