"""What belongs to the episode's target customer: shared by the communications and claims graders."""

from __future__ import annotations

from typing import Any

__all__ = ["target_records"]


def target_records(episode: Any, state: Any) -> list[Any]:
    """The target customer's records in ``state``: the customer, their policies and premium changes, each policy's
    plans, and each plan's fees, payments and credits (in that order)."""
    t = episode.target
    records: list[Any] = []
    customer = state.get("customers", t["customer"])
    if customer is not None:
        records.append(customer)
    for policy in state.children("policies", "customer_id", t["customer"]):
        records.append(policy)
        records += list(state.children("premium_changes", "policy_id", policy.id))
        for plan in state.children("plans", "policy_id", policy.id):
            records.append(plan)
            for table in ("fees", "payments", "credits"):
                records += list(state.children(table, "plan_id", plan.id))
    return records
