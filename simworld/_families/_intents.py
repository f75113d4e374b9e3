"""The intent library: what each kind of request asks for, the calls that do it, and how it is refused.

An intent knows its parameters, the text a phrasing fills in for them, the calls of the
*act* path (reads, then writes, with ``{var}`` templates filled per seed and
``{"$ref": NAME}`` naming the result of an earlier call), the required steps of each
outcome, and the sentence that tells the customer why a refused request is refused.
Whether the act path is allowed is not decided here: the solver (:mod:`._solve`) plays it
on the perturbed world and asks the authority grader's rule code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from simworld._world.dates import ordinal

__all__ = ["FIXED", "INTENTS", "Call", "Intent"]


@attrs.frozen
class Call:
    """One templated call of a solution: ``name`` lets a later call take its result with ``{"$ref": name}``."""

    tool: str
    args: dict[str, Any]
    name: str = ""


@attrs.frozen
class Intent:
    """One kind of request.

    ``paths(params)`` gives the act path's alternatives, each ``(reads, writes, label)``; ``summary``
    the finish text; ``reasons`` the refusal sentence per rule id; ``fixed`` an outcome that needs no
    play (a request no tool can do: a currency switch, a rate change); ``texts`` the values a phrasing's
    ``[[name]]`` fields take; ``world_filter`` narrows the world block where a value would change the
    request's meaning (a due day equal to the current anchor is no change); ``escalation`` the reason of an
    escalation that is as right as acting, when acting rests on the customer's word alone.
    """

    name: str
    params: tuple[str, ...]
    paths: Callable[[Mapping[str, Any]], list[tuple[list[Call], list[Call], str]]]
    read_step: Callable[[Mapping[str, Any]], dict[str, Any]]
    write_steps: Callable[[Mapping[str, Any]], list[dict[str, Any]]]
    summary: Callable[[Mapping[str, Any]], str]
    reasons: Callable[[Mapping[str, Any], str], str]
    texts: Callable[[Mapping[str, Any]], dict[str, str]] = lambda p: {}
    fixed: str | None = None
    world_filter: Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]] = lambda p, w: w
    params_kind: Mapping[str, str] = attrs.field(factory=dict)  # name -> "task" for seed-time task.json params
    #: When carrying the request out rests on the customer's word alone, the escalation that is right too: its
    #: reason (the world holds no record that would settle it, and the policy escalates such a change).
    escalation: Callable[[Mapping[str, Any]], str] | None = None


_PLAN_READ = Call("get_plan", {"plan_id": "{plan_id}"})


def _split_paths(p: Mapping[str, Any]) -> list[tuple[list[Call], list[Call], str]]:
    ends = ["first", "last"] if p["remainder"] == "unspecified" else [p["remainder"]]
    return [([_PLAN_READ, Call("quote_split", {"plan_id": "{plan_id}", "count": p["count"], "remainder": end},
                               "quote")],
             [Call("set_schedule", {"plan_id": "{plan_id}", "instalments": {"$ref": "quote.instalments"}})],
             f"remainder-{end}") for end in ends]


def _split_texts(p: Mapping[str, Any]) -> dict[str, str]:
    extra = {"first": " with any odd cent on the first payment", "last": " with any odd cent on the last payment",
             "unspecified": ""}[p["remainder"]]
    return {"count": str(p["count"]), "remainder_text": extra}


_SPLIT = Intent(
    "split", ("count", "remainder"), _split_paths,
    read_step=lambda p: {"tool": ["get_plan", "quote_split"], "args": {"plan_id": "{plan_id}"}},
    write_steps=lambda p: [{"tool": "set_schedule", "args": {"plan_id": "{plan_id}"}}],
    summary=lambda p: f"Split the unpaid balance of {{unpaid_balance}} {{currency}} into {p['count']} monthly "
                      "instalments.",
    reasons=lambda p, rule: f"A split into {p['count']} instalments is not possible on your plan (rule "
                            "split_bounds): a split has between 2 and 12 instalments, the last one due within the "
                            "policy term and none below the minimum instalment. Your plan stays as it is.",
    texts=_split_texts,
)


def _due_day_filter(p: Mapping[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    return {**world, "anchor_days": [d for d in world.get("anchor_days", []) if d != p["day"]]}


_DUE_DAY = Intent(
    "due_day", ("day",),
    lambda p: [([_PLAN_READ], [Call("change_due_day", {"plan_id": "{plan_id}", "day": p["day"]})], "")],
    read_step=lambda p: {"tool": "get_plan", "args": {"plan_id": "{plan_id}"}},
    write_steps=lambda p: [{"tool": "change_due_day", "args": {"plan_id": "{plan_id}", "day": p["day"]}}],
    summary=lambda p: f"Moved the due day of the unpaid instalments to the {ordinal(p['day'])}; paid instalments "
                      "keep their dates.",
    reasons=lambda p, rule: "Only one due-day change is allowed per term and this plan's has already been made "
                            f"(rule due_day), so the due day cannot be moved to the {ordinal(p['day'])}. Your "
                            "plan stays as it is.",
    texts=lambda p: {"day": ordinal(p["day"])},
    world_filter=_due_day_filter,
)

_WAIVE = Intent(
    "waive", (),
    lambda p: [([Call("list_fees", {"plan_id": "{plan_id}"})],
                [Call("waive_fee", {"fee_id": "{fee_id}", "reason": "Goodwill waiver of a late fee."})], "")],
    read_step=lambda p: {"tool": "list_fees", "args": {"plan_id": "{plan_id}"}},
    write_steps=lambda p: [{"tool": "waive_fee", "args": {"fee_id": "{fee_id}"}}],
    summary=lambda p: "Waived the late fee {fee_id} of {fee_amount} {currency} as a one-off.",
    reasons=lambda p, rule: (
        "The late fee {fee_id} of {fee_amount} {currency} is above my waiver authority (rule fee_waiver), so a "
        "colleague must decide; the fee stays open." if rule == "fee_waiver:authority" else
        "A fee on this account was already waived within the last 12 months and only one waiver is allowed in any "
        "12 months (rule fee_waiver), so the late fee of {fee_amount} {currency} cannot be waived and stays open."),
)


def _defer_paths(p: Mapping[str, Any]) -> list[tuple[list[Call], list[Call], str]]:
    modes = ["end", "spread"] if p["mode"] == "unspecified" else [p["mode"]]
    return [([_PLAN_READ], [Call("defer_instalment", {"plan_id": "{plan_id}", "seq": "{next_seq}", "mode": m})],
             f"defer-{m}") for m in modes]


def _defer_reason(rule: str) -> str:
    """The refusal of a deferral, naming the condition of rule deferral that applies (both, when both do)."""
    why = []
    if "deferral:count" in rule:
        why.append("this plan's one deferral for the term has already been used")
    if "deferral:overdue" in rule:
        why.append("an instalment on this plan is more than 30 days overdue, and no deferral is possible while one is")
    return (f"Your instalment cannot be deferred (rule deferral): {' and '.join(why)}. Your plan stays as it is.")


_DEFER = Intent(
    "defer", ("mode",), _defer_paths,
    read_step=lambda p: {"tool": "get_plan", "args": {"plan_id": "{plan_id}"}},
    write_steps=lambda p: [{"tool": "defer_instalment", "args": {"plan_id": "{plan_id}", "seq": "{next_seq}"}}],
    summary=lambda p: "Deferred the instalment due {next_due_date} as asked.",
    reasons=lambda p, rule: _defer_reason(rule),
    texts=lambda p: {"mode_text": {"end": " and add it to my last payment", "spread": " and spread it over the "
                                   "payments after it", "unspecified": ""}[p["mode"]]},
)


def _premium_paths(p: Mapping[str, Any]) -> list[tuple[list[Call], list[Call], str]]:
    out = []
    for end in ("first", "last"):
        quote = Call("quote_premium_change", {"policy_id": "{policy_id}", "new_annual_premium": "{new_premium}",
                                              "effective_date": "{next_due_date}", "remainder": end}, "quote")
        writes = [Call("record_premium_change", {"policy_id": "{policy_id}", "new_annual_premium": "{new_premium}",
                                                 "effective_date": "{next_due_date}"}),
                  Call("set_schedule", {"plan_id": "{plan_id}", "instalments": {"$ref": "quote.instalments"},
                                        "credit": {"$ref": "quote.credit"}})]
        out.append(([Call("get_policy", {"policy_id": "{policy_id}"}), quote], writes, f"remainder-{end}"))
    return out


_PREMIUM = Intent(
    "premium", ("direction", "band"), _premium_paths,
    read_step=lambda p: {"tool": ["get_policy", "quote_premium_change"], "args": {"policy_id": "{policy_id}"}},
    write_steps=lambda p: [{"tool": "record_premium_change", "args": {"policy_id": "{policy_id}",
                                                                       "new_annual_premium": "{new_premium}",
                                                                       "effective_date": "{next_due_date}"}},
                           {"tool": "set_schedule", "args": {"plan_id": "{plan_id}"}}],
    summary=lambda p: "Recorded the new annual premium of {new_premium} {currency} from {next_due_date} and "
                      "allocated the pro-rata change over the unpaid instalments.",
    reasons=lambda p, rule: "This premium change cannot be applied as asked.",
    texts=lambda p: {"direction": "increase" if p["direction"] == "increase" else "reduction"},
    # The approval is the customer's word: no endorsement or pending change is on record, and the policy escalates
    # any change of pricing and anything needing underwriting. Acting on the stated approval (with the quote the
    # world computes) and escalating it to a colleague who can confirm it are both right.
    escalation=lambda p: "The customer says underwriting approved a change of the annual premium of policy "
                         "{policy_id} from {annual_premium} {currency} to {new_premium} {currency} from "
                         "{next_due_date}; no approved change is on record, and a change of pricing must be "
                         "escalated (rule escalation) so that a colleague can confirm it. Nothing has been changed.",
)

_CANCEL = Intent(
    "cancel", (),
    lambda p: [([Call("get_policy", {"policy_id": "{policy_id}"}),
                 Call("quote_cancellation", {"policy_id": "{policy_id}", "cancel_date": "{today}"}, "quote")],
                [Call("cancel_policy", {"policy_id": "{policy_id}", "cancel_date": "{today}",
                                        "refund_amount": {"$ref": "quote.refund"}})], "")],
    read_step=lambda p: {"tool": "quote_cancellation", "args": {"policy_id": "{policy_id}"}},
    write_steps=lambda p: [{"tool": "cancel_policy", "args": {"policy_id": "{policy_id}", "cancel_date": "{today}"}}],
    summary=lambda p: "Cancelled policy {policy_id} from {today}; the remaining instalments are cancelled and the "
                      "refund from the cancellation quote is recorded.",
    reasons=lambda p, rule: "The refund due on cancelling policy {policy_id} is above the refund threshold, which "
                            "must be escalated (rule escalation); a colleague will confirm the cancellation and the "
                            "refund. Nothing has been changed yet.",
)

_PAYOFF = Intent(
    "payoff", ("as_of",),
    lambda p: [([Call("quote_payoff", {"plan_id": "{plan_id}", "as_of": "{" + p["as_of"] + "}"}, "quote")], [],
                "")],
    read_step=lambda p: {"tool": "quote_payoff", "args": {"plan_id": "{plan_id}", "as_of": "{" + p["as_of"] + "}"}},
    write_steps=lambda p: [],
    summary=lambda p: {"$ref": "quote.payoff"},  # type: ignore[arg-type,return-value]
    reasons=lambda p, rule: "",
    texts=lambda p: {"as_of": "{" + p["as_of"] + "}"},
)


def _fixed(outcome: str, name: str, params: tuple[str, ...], text: Callable[[Mapping[str, Any]], str],
           texts: Callable[[Mapping[str, Any]], dict[str, str]] = lambda p: {},
           world_filter: Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]] = lambda p, w: w) -> Intent:
    """An intent no tool can carry out: its outcome is the policy's, whatever the world."""
    return Intent(name, params, lambda p: [([_PLAN_READ], [], "")],
                  read_step=lambda p: {"tool": "get_plan", "args": {"plan_id": "{plan_id}"}},
                  write_steps=lambda p: [], summary=lambda p: "", reasons=lambda p, rule: text(p), texts=texts,
                  fixed=outcome, world_filter=world_filter)


def _not_currency(p: Mapping[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    return {**world, "currencies": [c for c in world.get("currencies", []) if c != p["wanted"]]}


_CURRENCY = _fixed(
    "decline", "currency", ("wanted",),
    lambda p: f"A plan's currency is fixed (rule currency_fixed), so your instalments stay in {{currency}} and "
              f"cannot be billed in {p['wanted']}. Your plan stays as it is.",
    texts=lambda p: {"wanted": p["wanted"]}, world_filter=_not_currency)
def _frequency_reason(p: Mapping[str, Any]) -> str:
    # The policy offers monthly and annual billing only; a switch between the two waits for the renewal.
    if p["wanted"] == "annual":
        return ("A change between monthly and annual billing takes effect at renewal only (rule renewal_only), so "
                "your plan cannot move to annual billing in the middle of the term. Your plan stays as it is.")
    return (f"{p['wanted'].capitalize()} billing is not offered: plans are billed monthly or annually only (rule "
            f"renewal_only), so your plan cannot move to {p['wanted']} billing. Your plan stays as it is.")


_FREQUENCY = _fixed("decline", "frequency", ("wanted",), _frequency_reason, texts=lambda p: {"wanted": p["wanted"]})
_PRICING = _fixed(
    "escalate", "pricing", ("topic",),
    lambda p: {"interest_rate": "The customer asks for a lower interest rate on the plan",
               "discount": "The customer asks for a loyalty discount on the premium",
               "underwriting": "The customer asks to add cover that needs underwriting"}[p["topic"]]
    + "; rate, pricing and underwriting decisions must be escalated (rule escalation). Nothing has been changed.",
    texts=lambda p: {"ask": {"interest_rate": "Could you lower the interest rate on my instalment plan?",
                             "discount": "Could you give me a loyalty discount on my premium?",
                             "underwriting": "I'd like to add cover for a new garden studio to my policy."}
                     [p["topic"]]})
_VAGUE_SPLIT = _fixed(
    "request_information", "vague_split", ("wording",),
    lambda p: "Happy to help. Into how many monthly instalments (between 2 and 12, the last one within your "
              "policy term) would you like the remaining {unpaid_balance} {currency} split?",
    texts=lambda p: {"wording": {"few": "a few months", "longer": "a longer stretch", "smaller": "smaller "
                                 "payments"}[p["wording"]]})

_MOVE_PAID = _fixed(
    "decline", "move_paid", ("day",),
    lambda p: "Instalment {paid_seq} (due {paid_due_date}) is already paid, and a paid instalment cannot be changed "
              f"(rule paid_immutable), so it cannot be moved to the {ordinal(p['day'])}. Your plan stays as it is.",
    texts=lambda p: {"day": ordinal(p["day"])})


def _overpay_paths(p: Mapping[str, Any]) -> list[tuple[list[Call], list[Call], str]]:
    if p["apply_to"] == "oldest":
        return [([_PLAN_READ], [Call("apply_payment", {"plan_id": "{plan_id}", "amount": "{payment}",
                                                       "idempotency_key": "customer-payment-1",
                                                       "apply_to": "oldest"})], "")]
    # "Instead of just the next instalment ... put what is over towards my last payment": the next instalment is
    # paid as usual and only the excess goes on the last (from the last backwards, should it cover more than
    # the last). One payment cannot be split two ways, so it is posted as two parts, in either order.
    pay_next = Call("apply_payment", {"plan_id": "{plan_id}", "amount": "{next_amount}",
                                      "idempotency_key": "customer-payment-1-next"})
    pay_rest = Call("apply_payment", {"plan_id": "{plan_id}", "amount": "{excess}",
                                      "idempotency_key": "customer-payment-1-excess", "apply_to": "last"})
    return [([_PLAN_READ], [pay_next, pay_rest], ""), ([_PLAN_READ], [pay_rest, pay_next], "excess-first")]


def _overpay_steps(p: Mapping[str, Any]) -> list[dict[str, Any]]:
    if p["apply_to"] == "oldest":  # 'oldest' is the default: an agent that leaves apply_to out does the same
        return [{"tool": "apply_payment", "args": {"plan_id": "{plan_id}", "amount": "{payment}"}}]
    return [{"tool": "apply_payment", "args": {"plan_id": "{plan_id}", "amount": "{next_amount}"}},
            {"tool": "apply_payment", "args": {"plan_id": "{plan_id}", "amount": "{excess}", "apply_to": "last"}}]


_OVERPAY = Intent(
    "overpay", ("apply_to", "band"), _overpay_paths,
    read_step=lambda p: {"tool": "get_plan", "args": {"plan_id": "{plan_id}"}},
    write_steps=_overpay_steps,
    summary=lambda p: "Applied your payment of {payment} {currency} " + (
        "as you asked: {next_amount} {currency} pays your instalment due {next_due_date}, and the other {excess} "
        "{currency} goes towards your last instalment." if p["apply_to"] == "last" else
        "to your earliest unpaid instalments first, as you asked."),
    reasons=lambda p, rule: "This payment cannot be applied as asked.",
    texts=lambda p: {"where": {"last": "pay my next instalment with it and put what is over towards my last payment",
                               "oldest": "use it for my next payments first"}[p["apply_to"]]},
)

#: Every intent a family may name, by name.
INTENTS: dict[str, Intent] = {i.name: i for i in (_SPLIT, _DUE_DAY, _WAIVE, _DEFER, _PREMIUM, _CANCEL, _PAYOFF,
                                                  _CURRENCY, _FREQUENCY, _PRICING, _VAGUE_SPLIT, _MOVE_PAID,
                                                  _OVERPAY)}
#: Outcome classes an intent can be given without playing it.
FIXED = ("decline", "escalate", "request_information")

#: Seed-time task.json params a premium intent adds (the change's size is drawn per seed in the plan's currency).
PREMIUM_BANDS = {("increase", "small"): ["40.00", "120.00"], ("increase", "large"): ["150.00", "260.00"],
                 ("decrease", "small"): ["-120.00", "-40.00"], ("decrease", "large"): ["-260.00", "-150.00"]}
#: Seed-time task.json params an overpayment adds: the payment, one to two instalments' worth or more.
OVERPAY_BANDS = {"small": ["130.00", "190.00"], "large": ["210.00", "320.00"]}
#: An overpayment whose excess goes on the last instalment draws the excess over the next instalment (the
#: payment is their sum, so it is always more than the next instalment): below one instalment, or about one.
EXCESS_BANDS = {"small": ["30.00", "60.00"], "large": ["65.00", "150.00"]}
