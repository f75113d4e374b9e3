"""A stateful test over the world's WRITE tools: every invariant holds after every step.

Hypothesis's RuleBasedStateMachine drives any sequence of correct writes (splits from
the quote, due-day changes, deferrals, payments with repeated idempotency keys, fee
waivers, premium changes from the quote, cancellations) mixed with bad and forbidden
calls, and checks simworld.invariants after each one.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from simworld._grading.invariants import check_episode, check_plan
from simworld._world.clock import SimClock
from simworld._world.models import LOCKED, UNPAID
from simworld._world.money import Money
from simworld._world.snapshot import SnapshotLoader
from simworld._world.tools import TOOLS
from simworld._world.world import World

SNAPSHOT = SnapshotLoader().load(Path(__file__).resolve().parent.parent / "snapshots" / "small.json")
PLANS = ("pln_001", "pln_002", "pln_003", "pln_019", "pln_022")
FEES = ("fee_006", "fee_007", "fee_010", "fee_020b")


class WriteTools(RuleBasedStateMachine):
    """Any sequence of writes keeps the world's invariants."""

    def __init__(self) -> None:
        super().__init__()
        self.world = World(SNAPSHOT.state(), SimClock(SNAPSHOT.clock), SNAPSHOT.policy, dict(TOOLS))
        self.initial = self.world.state

    # -- helpers --------------------------------------------------------------------------------------

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        return self.world.call(tool, args)

    def plan(self, plan_id: str) -> Any:
        return self.world.state.get("plans", plan_id)

    def open_plan(self, plan_id: str) -> bool:
        plan = self.plan(plan_id)
        policy = self.world.state.get("policies", plan.policy_id)
        return policy.status == "active" and any(i.status in UNPAID for i in plan.instalments)

    # -- rules ------------------------------------------------------------------------------------------

    @rule(plan_id=st.sampled_from(PLANS), n=st.integers(2, 12), remainder=st.sampled_from(["first", "last"]))
    def split(self, plan_id: str, n: int, remainder: str) -> None:
        if not self.open_plan(plan_id):
            return
        quote = self.call("quote_split", {"plan_id": plan_id, "count": n, "remainder": remainder})
        policy = self.world.state.get("policies", self.plan(plan_id).policy_id)
        if quote.status != "ok" or quote.result["instalments"][-1]["due_date"] > policy.term_end.isoformat():
            return  # past the term end: a correct agent would not write it
        before = self.world.state.hash
        event = self.call("set_schedule", {"plan_id": plan_id, "instalments": quote.result["instalments"]})
        if event.status != "ok":
            assert self.world.state.hash == before  # denied (before a paid date) changes nothing
            return
        owed = [i.amount for i in self.plan(plan_id).instalments if i.status in UNPAID]
        from simworld._grading.invariants import even_split_problem

        assert even_split_problem(owed, remainder) is None

    @rule(plan_id=st.sampled_from(PLANS), day=st.integers(1, 31))
    def change_due_day(self, plan_id: str, day: int) -> None:
        if self.open_plan(plan_id):
            assert self.call("change_due_day", {"plan_id": plan_id, "day": day}).status == "ok"

    @rule(plan_id=st.sampled_from(PLANS), pick=st.integers(0, 20), mode=st.sampled_from(["end", "spread"]))
    def defer(self, plan_id: str, pick: int, mode: str) -> None:
        owed = [i for i in self.plan(plan_id).instalments if i.status in UNPAID]
        if self.open_plan(plan_id) and len(owed) >= 2:
            seq = owed[pick % (len(owed) - 1)].seq
            assert self.call("defer_instalment", {"plan_id": plan_id, "seq": seq, "mode": mode}).status == "ok"

    @rule(plan_id=st.sampled_from(PLANS), share=st.integers(1, 300), key=st.sampled_from(["a", "b", "c"]))
    def pay(self, plan_id: str, share: int, key: str) -> None:
        plan = self.plan(plan_id)
        if not self.open_plan(plan_id):
            return
        amount = Money(max(1, sum(i.amount.minor for i in plan.instalments if i.status in UNPAID) * share // 200),
                       plan.currency)
        before = self.world.state
        event = self.call("apply_payment", {"plan_id": plan_id, "amount": str(amount), "idempotency_key": key})
        assert event.status == "ok"
        if event.result["duplicate"]:
            assert self.world.state.hash == before.hash  # a repeated key is a no-op

    @rule(fee_id=st.sampled_from(FEES))
    def waive(self, fee_id: str) -> None:
        fee = self.world.state.get("fees", fee_id)
        event = self.call("waive_fee", {"fee_id": fee_id, "reason": "goodwill"})
        assert event.status == ("ok" if fee.status == "open" and self.world.state.get(
            "policies", self.plan(fee.plan_id).policy_id).status == "active" else "denied")

    @rule(plan_id=st.sampled_from(PLANS), percent=st.integers(-60, 60))
    def premium_change(self, plan_id: str, percent: int) -> None:
        plan = self.plan(plan_id)
        if not self.open_plan(plan_id):
            return
        policy = self.world.state.get("policies", plan.policy_id)
        owed = [i for i in plan.instalments if i.status in UNPAID]
        new = Money(max(1, policy.annual_premium.minor * (100 + percent) // 100), policy.currency)
        effective = owed[0].due_date.isoformat()
        args = {"policy_id": policy.id, "new_annual_premium": str(new), "effective_date": effective}
        quote = self.call("quote_premium_change", args)
        assert quote.status == "ok"
        assert self.call("record_premium_change", args).status == "ok"
        assert self.call("set_schedule", {"plan_id": plan_id, "instalments": quote.result["instalments"],
                                          "credit": quote.result["credit"]}).status == "ok"

    @precondition(lambda self: self.world.seq > 4)
    @rule(plan_id=st.sampled_from(PLANS))
    def cancel(self, plan_id: str) -> None:
        plan = self.plan(plan_id)
        policy = self.world.state.get("policies", plan.policy_id)
        if policy.status != "active":
            return
        today = self.world.today().isoformat()
        if not policy.term_start.isoformat() <= today <= policy.term_end.isoformat():
            return
        quote = self.call("quote_cancellation", {"policy_id": policy.id, "cancel_date": today})
        assert self.call("cancel_policy", {"policy_id": policy.id, "cancel_date": today,
                                           "refund_amount": quote.result["refund"]}).status == "ok"

    @rule(tool=st.sampled_from(sorted(n for n, t in TOOLS.items() if t.kind.value == "write")),
          junk=st.dictionaries(st.sampled_from(["plan_id", "amount", "day", "seq", "x"]),
                               st.one_of(st.integers(-5, 40), st.text(max_size=5), st.none()), max_size=3))
    def bad_call(self, tool: str, junk: dict[str, Any]) -> None:
        before = self.world.state.hash
        event = self.call(tool, junk)
        if event.status != "ok":
            assert self.world.state.hash == before  # errors and denials change nothing

    @rule(plan_id=st.sampled_from(PLANS), mode=st.sampled_from(["end", "spread"]))
    def touch_paid(self, plan_id: str, mode: str) -> None:
        locked = [i for i in self.plan(plan_id).instalments if i.status in LOCKED]
        if locked:
            before = self.world.state.hash
            event = self.call("defer_instalment", {"plan_id": plan_id, "seq": locked[0].seq, "mode": mode})
            assert event.status == "denied" and self.world.state.hash == before

    # -- the invariants ------------------------------------------------------------------------------------

    @invariant()
    def invariants_hold(self) -> None:
        state = self.world.state
        for plan_id in PLANS:
            found = check_plan(self.initial, state, plan_id, rescheduled=False)
            assert not found, [str(v) for v in found]
        episode = SimpleNamespace(initial_state=self.initial, final_state=state, events=list(self.world.events),
                                  states=list(self.world.states), outcome=None)
        found = check_episode(episode)
        assert not found, [str(v) for v in found]


TestWriteTools = WriteTools.TestCase
TestWriteTools.settings = settings(max_examples=60, stateful_step_count=25, deadline=None,
                                   suppress_health_check=[HealthCheck.too_slow])
