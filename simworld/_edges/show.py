"""``simworld show``: what the agent would see, and the world it acts on, as text.

Only dev worlds are ever shown: a holdout world printed once is a holdout world leaked (its
request, amounts and dates can be tuned against), so :func:`render_scenario` refuses any seed
in the holdout range, and any holdout instance (task.json ``"split": "holdout"``) at any seed,
whoever calls it.
"""

from __future__ import annotations

from simworld._scenario.scenario import Scenario
from simworld._world.models import to_json
from simworld._world.splits import HOLDOUT_BASE, check_seed
from simworld.errors import ScenarioError

__all__ = ["check_showable", "render_scenario"]


def check_showable(seed: int, split: str = "dev") -> None:
    """Refuse what ``show`` must not print: ``--split holdout``, a seed in the holdout range, a negative seed."""
    if split == "holdout":
        raise ScenarioError("--split holdout: show never prints a holdout world (showing one would leak it); "
                            f"show a dev seed below {HOLDOUT_BASE} instead.")
    if split == "dev" and seed >= HOLDOUT_BASE:
        raise ScenarioError(f"--seed {seed} is in the holdout range (seeds from {HOLDOUT_BASE}) and show never prints "
                            f"a holdout world (showing one would leak it); give a dev seed below {HOLDOUT_BASE}.")
    check_seed(seed, split)


def render_scenario(scenario: Scenario, seed: int) -> str:
    """The scenario at dev ``seed``: request, policy text, tools, and a summary of the target's records.

    Raises:
        ScenarioError: ``seed`` is negative or in the holdout range (see :func:`check_showable`), or the
            scenario is a holdout instance.
    """
    check_showable(seed)
    if scenario.split == "holdout":
        raise ScenarioError(f"scenario {scenario.id!r} is a holdout instance (task.json \"split\": \"holdout\") and "
                            "show never prints a holdout world (showing one would leak it); show a dev scenario.")
    inst = scenario.instance(seed)
    v = inst.vars
    state = inst.state
    lines = [f"# {scenario.id} (seed {seed})", "", scenario.description, "",
             f"category: {scenario.category}; allowed outcomes: {', '.join(scenario.allowed_outcomes)}; "
             f"budget: {scenario.max_steps} steps, {scenario.timeout_s:g} s"]
    if scenario.recovery:
        r = scenario.recovery
        lines.append(f"recovery: the agent dies at call {r.crash_at_call}, "
                     f"{'after' if r.after_side_effect else 'before'} its effect lands")
    lines += ["", "## Request", "", scenario.request(v), "", "## Policy", "",
              scenario.snapshot.policy.render(v["currency"]), "", "## Tools", ""]
    from simworld._world.tools import TOOLS

    for name in scenario.tools:
        t = TOOLS[name]
        lines.append(f"- {name} [{t.kind.value}]: {t.description.split('. ')[0].rstrip('.')}.")
    customer = state.get("customers", scenario.target["customer"])
    policy = state.get("policies", scenario.target["policy"])
    plan = state.get("plans", scenario.target["plan"])
    lines += ["", "## World", "", f"simulated now: {inst.clock.isoformat()}",
              f"customer {customer.id}: {customer.name} <{customer.email}>, "
              f"{'verified' if customer.verified else 'NOT verified'}, {customer.timezone}"]
    if customer.notes:
        lines.append(f"  notes: {customer.notes}")
    lines += [f"policy {policy.id}: {policy.product}, {policy.currency}, {policy.term_start}..{policy.term_end}, "
              f"annual premium {policy.annual_premium}, {policy.status}",
              f"plan {plan.id}: anchor day {plan.anchor_day}, remainder {plan.remainder}, unpaid balance "
              f"{v['unpaid_balance']} {plan.currency}",
              "  seq  due         draft       amount        paid          status"]
    for i in plan.instalments:
        lines.append(f"  {i.seq:<4} {i.due_date}  {i.draft_date}  {str(i.amount):>12}  {str(i.paid_amount):>12}  "
                     f"{i.status}")
    for fee in state.children("fees", "plan_id", plan.id):
        f = to_json(fee)
        lines.append(f"fee {fee.id}: {f['kind']} {f['amount']} {fee.currency}, {f['status']}, charged {f['charged_on']}"
                     + (f", waived {f['waived_on']}" if f["waived_on"] else ""))
    n_pay = len(state.children("payments", "plan_id", plan.id))
    lines.append(f"payments on the plan: {n_pay}; credits: {len(state.children('credits', 'plan_id', plan.id))}")
    params = {k: v[k] for k in scenario.params}
    if params:
        lines.append(f"seeded params: {params}")
    return "\n".join(lines)
