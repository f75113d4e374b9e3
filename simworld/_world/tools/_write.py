"""WRITE tools: they apply exactly what the agent passes.

The system refuses what it enforces (a paid instalment, a cancelled policy,
malformed money); what is the agent's own responsibility (conservation of a
total, the due-day rule, an authority limit) goes through and is left for the
graders. Ids of new records are natural keys (a payment is keyed by its plan and
idempotency key), so the same work yields the same state however it was reached.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal, TypedDict

import orjson

from simworld._world.dates import due_date, roll
from simworld._world.models import (
    LOCKED,
    UNPAID,
    Credit,
    Instalment,
    InstalmentStatus,
    Message,
    Payment,
    PremiumChange,
    json_fragment,
    remade,
)
from simworld._world.money import Money, allocate
from simworld._world.tools._read import (
    cancellation_args,
    date_arg,
    plan_view,
    premium_change,
    premium_change_args,
    received,
    unpaid,
)
from simworld._world.tools._registry import Amount, IsoDate, Kind, tool
from simworld._world.world import World
from simworld.errors import PolicyDenied, ToolArgumentError

__all__ = ["WRITE_TOOLS", "ScheduleItem"]


class ScheduleItem(TypedDict):
    """One instalment of a new schedule."""

    due_date: IsoDate
    amount: Amount


_NO_CREDIT = Amount("0")


def _instalment(plan_id: str, seq: int, due: Any, amount: Money) -> Instalment:
    zero = Money.zero(amount.currency)
    return Instalment(f"{plan_id}-{seq}", seq, due, amount, zero, "planned", roll(due, "following"))


def _placed(plan_id: str, seq: int, due: date, what: Instalment | Money) -> Instalment:
    """The instalment at ``seq``: a new one due on ``due`` when ``what`` is its amount, else the kept instalment
    ``what`` renumbered (itself when already at ``seq``: the same value, its JSON already made)."""
    rid = f"{plan_id}-{seq}"
    if isinstance(what, Money):
        return _instalment(plan_id, seq, due, what)
    if what.seq == seq and what.id == rid:
        return what
    # Written out rather than attrs.evolve, which reads every field by name: a schedule renumbers a dozen.
    return Instalment(rid, seq, what.due_date, what.amount, what.paid_amount, what.status, what.draft_date)


@tool(Kind.WRITE, latency=1.0)
def set_schedule(world: World, plan_id: str, instalments: list[ScheduleItem],
                 credit: Amount = _NO_CREDIT) -> orjson.Fragment:
    """Replace the plan's unpaid instalments with the due dates and amounts given, in order.

    Paid, partially paid, waived and cancelled instalments stay as they are, and the new ones
    must fall after every paid one (so a paid-off plan can take a new instalment, e.g. for a
    premium increase). The system does not force the new amounts to add up to the old balance:
    that is yours to get right.
    An empty list removes every unpaid instalment (when nothing is owed any more); a credit
    records money owed back to the customer, e.g. when a premium decrease exceeds the balance,
    and a negative one uses credit the plan holds, e.g. to pay an increase on a paid-off plan.

    Args:
        plan_id: The plan's id.
        instalments: The new unpaid instalments, each {"due_date": "YYYY-MM-DD", "amount": "333.34"}, in date order.
        credit: Unapplied money to leave on the plan for the customer, e.g. '200.00'; '0' for none; negative to use
            that much of the plan's credit (at most what it holds), e.g. '-20.00' when an increase is paid from it.
    """
    plan, _policy = world.writable_plan(plan_id)
    if len(instalments) > 60:
        raise ToolArgumentError(f"set_schedule: give at most 60 instalments but got {len(instalments)}.")
    credit_money = world.money(credit, plan.currency, "credit")
    held = Money.total((c.amount for c in world.state.children("credits", "plan_id", plan.id)), plan.currency)
    if -credit_money > held:
        raise ToolArgumentError(f"set_schedule: credit={credit!r} would use more than the {held} {plan.currency} of "
                                "credit the plan holds.")
    rows: list[tuple[date, Money]] = []
    for i, item in enumerate(instalments):
        due = date_arg(item["due_date"], f"instalments[{i}].due_date")
        amount = world.money(item["amount"], plan.currency, f"instalments[{i}].amount")
        if amount.minor < 0:
            raise ToolArgumentError(f"set_schedule: instalments[{i}].amount={item['amount']!r} is negative.")
        if rows and due <= rows[-1][0]:
            raise ToolArgumentError(f"set_schedule: instalments[{i}].due_date={item['due_date']!r} is not after "
                                    f"the previous due date; give the instalments in strictly increasing date order.")
        rows.append((due, amount))
    kept = [i for i in plan.instalments if i.status not in UNPAID]
    locked = [i for i in kept if i.status in LOCKED]
    if locked and rows and rows[0][0] <= max(i.due_date for i in locked):
        raise PolicyDenied(f"set_schedule: the first new due date {rows[0][0].isoformat()} is not after the paid "
                           f"instalment of {max(i.due_date for i in locked).isoformat()}; paid instalments are "
                           "immutable (rule paid_immutable).")
    # Paid instalments keep their seq. The new ones and the cancelled or waived ones kept for history take the
    # other seqs in date order, so seq stays contiguous however many instalments the new schedule has.
    taken = {i.seq for i in locked}
    free = [n for n in range(1, len(kept) + len(rows) + 1) if n not in taken]
    movable = sorted([(i.due_date, 0, i) for i in kept if i.status not in LOCKED] +
                     [(due, 1, amount) for due, amount in rows],
                     key=lambda x: (x[0], x[1]))
    placed = [_placed(plan.id, seq, due, what) for seq, (due, _n, what) in zip(free, movable, strict=True)]
    plan = remade(plan, instalments=tuple(sorted(locked + placed, key=lambda i: i.seq)))
    world.put(plan)
    if credit_money.minor:
        n = len(world.state.children("credits", "plan_id", plan.id)) + 1
        reason = "schedule credit" if credit_money.minor > 0 else "schedule credit used"
        world.put(Credit(f"cr-{plan.id}-schedule-{n}", plan.id, plan.currency, credit_money, reason))
    return plan_view(plan)


@tool(Kind.WRITE, latency=1.0)
def change_due_day(world: World, plan_id: str, day: int) -> orjson.Fragment:
    """Move every unpaid instalment to `day` of its own month (clamped to the month's end) and make it the anchor.

    Asking for the day the plan already has changes nothing and does not count as a change.

    Args:
        plan_id: The plan's id.
        day: The new due day of the month, 1 to 31; 31 means the last day of shorter months.
    """
    plan, _policy = world.writable_plan(plan_id)
    if not 1 <= day <= 31:
        raise ToolArgumentError(f"change_due_day: day must be between 1 and 31 but got day={day!r}.")
    if day == plan.anchor_day:
        # Already the due day: nothing moves and no change is counted, so a retry is safe.
        return plan_view(plan)
    moved = []
    for inst in plan.instalments:
        if inst.status in UNPAID:
            due = due_date(inst.due_date.year, inst.due_date.month, day)
            # Written out rather than attrs.evolve (which reads every field by name): a plan moves a dozen.
            inst = Instalment(inst.id, inst.seq, due, inst.amount, inst.paid_amount, inst.status,
                              roll(due, "following"))
        moved.append(inst)
    plan = remade(plan, instalments=tuple(moved), anchor_day=day, due_day_changes=plan.due_day_changes + 1)
    world.put(plan)
    return plan_view(plan)


@tool(Kind.WRITE, latency=1.0)
def defer_instalment(world: World, plan_id: str, seq: int, mode: Literal["end", "spread"]) -> orjson.Fragment:
    """Defer one unpaid instalment: its amount moves to the last instalment ('end') or over all later ones ('spread').

    The deferred instalment is kept, marked cancelled, so the history stays readable.

    Args:
        plan_id: The plan's id.
        seq: The seq of the instalment to defer.
        mode: 'end' adds its amount to the last unpaid instalment; 'spread' allocates it over the later unpaid ones.
    """
    plan, _policy = world.writable_plan(plan_id)
    target = next((i for i in plan.instalments if i.seq == seq), None)
    if target is None:
        raise ToolArgumentError(f"defer_instalment: plan {plan.id!r} has no instalment with seq={seq!r}.")
    if target.status in LOCKED:
        raise PolicyDenied(f"defer_instalment: instalment seq={seq} is {target.status}; paid instalments are "
                           "immutable (rule paid_immutable).")
    if target.status not in UNPAID:
        raise ToolArgumentError(f"defer_instalment: instalment seq={seq} is {target.status}; only unpaid ones defer.")
    later = [i for i in unpaid(plan) if i.seq > seq]
    if not later:
        raise ToolArgumentError(f"defer_instalment: instalment seq={seq} is the last unpaid one; "
                                "nothing to defer onto.")
    targets = later[-1:] if mode == "end" else later
    shares = allocate(target.amount, len(targets), "first" if plan.remainder == "first" else "last")
    bumped = {i.seq: remade(i, amount=i.amount + s) for i, s in zip(targets, shares, strict=True)}
    out = []
    for inst in plan.instalments:
        if inst.seq == seq:
            inst = remade(inst, status="cancelled")
        out.append(bumped.get(inst.seq, inst))
    plan = remade(plan, instalments=tuple(out), deferrals=plan.deferrals + 1)
    world.put(plan)
    return plan_view(plan)


@tool(Kind.WRITE, latency=1.0)
def record_premium_change(world: World, policy_id: str, new_annual_premium: Amount,
                          effective_date: IsoDate) -> dict[str, Any]:
    """Record the policy's new annual premium from an effective date. The instalments follow only through set_schedule.

    Args:
        policy_id: The policy's id.
        new_annual_premium: The new annual premium, e.g. '1320.00'.
        effective_date: The date it takes effect, YYYY-MM-DD, within the term.
    """
    policy, new, effective = premium_change_args(world, "record_premium_change", policy_id, new_annual_premium,
                                                 effective_date)
    # What the quote would say must be writable too (the same inputs are accepted by both): this raises where
    # quote_premium_change does, and changes nothing.
    premium_change(world, "record_premium_change", policy, new, effective, "last")
    change_id = f"pc-{policy.id}-{effective.isoformat()}"
    earlier = world.state.get("premium_changes", change_id)
    # A second change from the same date corrects the first: the premium it replaces stays the original one.
    old = earlier.old_premium if earlier is not None else policy.annual_premium
    change = PremiumChange(change_id, policy.id, policy.currency, old, new, effective)
    world.put(change)
    world.put(remade(policy, annual_premium=new))
    return {"premium_change": json_fragment(change)}


@tool(Kind.WRITE, latency=1.0)
def apply_payment(world: World, plan_id: str, amount: Amount, idempotency_key: str,
                  apply_to: Literal["oldest", "last"] = "oldest") -> dict[str, Any]:
    """Post a payment to a plan. Repeating an idempotency key is a no-op that returns the first payment.

    The payment pays unpaid instalments in order ('oldest' first, or from the 'last'); any
    excess stays on the plan as a credit.

    Args:
        plan_id: The plan's id.
        amount: The amount received, e.g. '150.00'.
        idempotency_key: A key unique to this payment; reuse it when retrying the same payment.
        apply_to: 'oldest' pays the earliest unpaid instalments first; 'last' pays from the final one backwards.
    """
    plan, _policy = world.writable_plan(plan_id)
    if not idempotency_key.strip():
        raise ToolArgumentError("apply_payment: idempotency_key is empty; pass a key unique to this payment.")
    pid = f"pay-{plan.id}-{idempotency_key}"
    existing = world.state.get("payments", pid)
    if existing is not None:
        return {"duplicate": True, "payment": json_fragment(existing)}
    money = world.money(amount, plan.currency, "amount")
    if money.minor <= 0:
        raise ToolArgumentError(f"apply_payment: amount={amount!r} must be positive.")
    open_ = [i for i in plan.instalments if i.status in UNPAID or i.status == "partially_paid"]
    if apply_to == "last":
        open_.reverse()
    left = money
    paid: dict[int, Instalment] = {}
    allocations = []
    for inst in open_:
        if left.minor == 0:
            break
        take = min(left, inst.amount - inst.paid_amount)
        now_paid = inst.paid_amount + take
        status: InstalmentStatus = "paid" if now_paid == inst.amount else "partially_paid"
        paid[inst.seq] = remade(inst, paid_amount=now_paid, status=status)
        allocations.append((inst.seq, take))
        left = left - take
    today = world.today()
    payment = Payment(pid, plan.id, plan.currency, money, today, idempotency_key, tuple(sorted(allocations)),
                      left if left.minor else None)
    world.put(payment)
    world.put(remade(plan, instalments=tuple(paid.get(i.seq, i) for i in plan.instalments)))
    if left.minor:
        world.put(Credit(f"cr-{pid}", plan.id, plan.currency, left, f"overpayment {idempotency_key}"))
    return {"duplicate": False, "payment": json_fragment(payment)}


@tool(Kind.WRITE, latency=0.8)
def waive_fee(world: World, fee_id: str, reason: str) -> dict[str, Any]:
    """Waive an open fee.

    Args:
        fee_id: The fee's id.
        reason: Why it is waived, as it will appear on the account.
    """
    fee = world.fee(fee_id)
    world.writable_plan(fee.plan_id)
    if fee.status != "open":
        raise PolicyDenied(f"waive_fee: fee {fee.id!r} is {fee.status}; only an open fee can be waived.")
    if not reason.strip():
        raise ToolArgumentError("waive_fee: reason is empty; say why the fee is waived.")
    fee = remade(fee, status="waived", waived_on=world.today())
    world.put(fee)
    return {"fee": json_fragment(fee)}


@tool(Kind.WRITE, latency=1.0)
def cancel_policy(world: World, policy_id: str, cancel_date: IsoDate, refund_amount: Amount) -> dict[str, Any]:
    """Cancel a policy from a date and record the refund you computed; later unpaid instalments are cancelled.

    Args:
        policy_id: The policy's id.
        cancel_date: The cancellation date, YYYY-MM-DD, within the term.
        refund_amount: The refund owed to the customer, e.g. '412.50'; '0.00' if none.
    """
    policy, when = cancellation_args(world, "cancel_policy", policy_id, cancel_date)
    refund = world.money(refund_amount, policy.currency, "refund_amount")
    if refund.minor < 0:
        raise ToolArgumentError(f"cancel_policy: refund_amount={refund_amount!r} is negative.")
    plans = world.state.children("plans", "policy_id", policy.id)
    paid_in = received(world, policy)
    if refund > paid_in:
        raise PolicyDenied(f"cancel_policy: refund {refund} exceeds the {paid_in} received on the policy.")
    for plan in plans:
        insts = tuple(remade(i, status="cancelled") if i.status in UNPAID and i.due_date > when else i
                      for i in plan.instalments)
        world.put(remade(plan, instalments=insts))
    policy = remade(policy, status="cancelled", cancelled_on=when, refund=refund)
    world.put(policy)
    return {"policy": json_fragment(policy)}


@tool(Kind.WRITE, latency=0.5)
def send_message(world: World, customer_id: str, subject: str, body: str) -> dict[str, Any]:
    """Send a message to a customer.

    Args:
        customer_id: The customer's id.
        subject: The subject line.
        body: The message text.
    """
    customer = world.customer(customer_id)
    if not body.strip():
        raise ToolArgumentError("send_message: body is empty.")
    message = Message(f"msg-{world.seq:04d}", customer.id, subject, body, world.clock.now)
    world.put(message)
    return {"message": json_fragment(message)}


WRITE_TOOLS = [set_schedule, change_due_day, defer_instalment, record_premium_change, apply_payment, waive_fee,
               cancel_policy, send_message]
