"""``simworld check``: prove each scenario's graders are load-bearing.

For every scenario and seed: every solution must pass, the do-nothing agent must fail,
and mutants of the reference solution must fail. Mutants are made from the reference
solution's concrete calls at that seed:

- ``drop-write``: drop each WRITE call;
- ``drop-read``: drop each READ call (usually equivalent: reads change nothing);
- ``swap-outcome``: replace the terminal call with each other outcome class;
- ``swap-order``: swap each pair of calls that a required step's ``after`` orders;
- ``paid-write``: insert, before the terminal call, a write to a paid instalment;
- ``round-each`` and ``float``: recompute each schedule's amounts by rounding every share
  half-up, or with float arithmetic, instead of allocating once;
- ``retarget``: address each message, escalation, information request or decline to
  another customer;
- ``foreign-figure``: put another customer's amount into each outgoing text (in place of
  its first amount, or added);
- ``false-claim``: add to the last outgoing text each claim the end state contradicts
  (a fee waived, a change applied, a currency switch, a note obeyed);
- ``free-claim``: add to the last outgoing text, as its own line, a sentence claiming an
  action not taken in free wording (a fee "taken care of", a balance "now spread", a refund
  "issued", an approval, a hand-over, a payment "I couldn't take"): one mutant for each of
  :data:`FREE_CLAIMS` that the reference's end state contradicts;
- ``disclose``: add to the last outgoing text another customer's e-mail, and (a second
  mutant) their name;
- ``derived-figure``: add to the last outgoing text a difference of two of the target's
  amounts off by one minor unit (one that no grounded figure or one step of arithmetic
  gives).

The communications mutants change nothing in the business end state, so they are never
equivalent by it: every one must be killed.

A mutant that passes every grader survives. It is *equivalent*, and listed with the
reason, when it is not a wrong answer after all: its calls are identical to the
reference's (the mutation changed nothing at this seed), or its end state equals a valid
solution's and its outcome is allowed. Any other survivor means the graders do not
discriminate, and the scenario fails the check.

A solution file that does not play at a seed (a call that is not ok, no terminal tool)
is a broken solution: wrong ground truth, reported apart from the graders' failures,
and the seed is skipped, since there is no complete set of valid end states to grade
against. Every message names a solution by its file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import attrs

from simworld._agents.kinds import NoopAgent
from simworld._episode.environment import Environment
from simworld._episode.episode import Episode, Observation
from simworld._episode.judge import grade, solution_end_states
from simworld._episode.play import AgentFactory, play
from simworld._episode.steps import steps_factory
from simworld._grading.projection import diff, project, touched
from simworld._scenario.scenario import Scenario
from simworld._world.clock import TimeGuard
from simworld._world.money import exponent, format_minor
from simworld._world.splits import parse_seeds
from simworld._world.state import State
from simworld._world.tools import TOOLS, Kind
from simworld.errors import BrokenSolutionError

__all__ = ["BrokenSolution", "Mutant", "ScenarioCheck", "check_scenario", "mutants", "parse_seeds",
           "solution_failures"]

#: Operators that change only what the agent says (never equivalent by end state).
_COMMS_OPERATORS = ("retarget", "foreign-figure", "false-claim", "free-claim", "disclose", "derived-figure")
#: Claims of an action in the free wording a chat model uses; each is a ``free-claim`` mutant wherever the
#: reference's end state contradicts it (the claims reader must catch every one).
FREE_CLAIMS = (
    "Good news: your late fee has been taken care of.",
    "I've gone ahead and wiped the charge off your account.",
    "Your balance is now spread over three payments.",
    "The new payment date will apply from next month.",
    "Your refund has been issued and is on its way to you.",
    "Your request has been approved.",
    "I've handed this over to a colleague in our review team.",
    "Sorry, I couldn't take the payment this time.",
    "Your policy has now been cancelled.",
    "I've declined your request.",
    "Your schedule stays exactly as it was.",
)
_TERMINAL_ARGS = {
    "finish": {"summary": "Done."},
    "escalate": {"reason": "Handing this to a colleague."},
    "request_information": {"question": "Could you tell me more?"},
    "decline": {"reason": "I cannot do that."},
}


@attrs.frozen
class Mutant:
    """One mutated call list and how it was made."""

    operator: str
    description: str
    actions: tuple[dict[str, Any], ...]


@attrs.frozen
class MutantOutcome:
    """What became of one mutant at one seed."""

    seed: int
    mutant: Mutant
    status: str  # killed | equivalent | survived
    reason: str = ""


@attrs.frozen
class BrokenSolution:
    """A solution file that does not play at one seed, and why."""

    file: str
    seed: int
    why: str


@attrs.define
class ScenarioCheck:
    """The check of one scenario over a range of seeds."""

    scenario: str
    seeds: int = 0
    broken_solutions: list[BrokenSolution] = attrs.field(factory=list)
    solution_failures: list[str] = attrs.field(factory=list)
    noop_passes: list[int] = attrs.field(factory=list)
    outcomes: list[MutantOutcome] = attrs.field(factory=list)

    def count(self, status: str) -> int:
        """How many mutants ended with ``status``."""
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def score(self) -> float:
        """Killed / (killed + non-equivalent survivors); 1.0 when there is nothing to kill."""
        killed, survived = self.count("killed"), self.count("survived")
        return killed / (killed + survived) if killed + survived else 1.0

    @property
    def discriminates(self) -> bool:
        """Whether the scenario's graders discriminate: solutions pass, noop and every real mutant fail."""
        return not self.solution_failures and not self.noop_passes and self.count("survived") == 0

    @property
    def ok(self) -> bool:
        """Whether the scenario passes the check: every solution plays and its graders discriminate."""
        return not self.broken_solutions and self.discriminates


class _Actions:
    """Plays concrete calls verbatim (no templates), then stops."""

    def __init__(self, actions: Sequence[dict[str, Any]]) -> None:
        self.actions = list(actions)
        self.i = 0

    def act(self, observation: Observation) -> dict[str, Any] | None:
        if observation.resumed:
            self.i = len(observation.history)
        if self.i >= len(self.actions):
            return None
        self.i += 1
        return self.actions[self.i - 1]


def _actions_factory(actions: Sequence[dict[str, Any]]) -> AgentFactory:
    return lambda sc, seed, variables: _Actions(actions)


def _replace_amounts(action: dict[str, Any], amounts: list[str]) -> dict[str, Any]:
    items = [{**item, "amount": a} for item, a in zip(action["args"]["instalments"], amounts, strict=True)]
    return {"tool": action["tool"], "args": {**action["args"], "instalments": items}}


def _round_each(total: Decimal, n: int, exp: int) -> list[str]:
    share = (total / n).quantize(Decimal(1).scaleb(-exp), rounding=ROUND_HALF_UP)
    return [str(share)] * n


def _float_shares(total: Decimal, n: int, exp: int) -> list[str]:
    share = float(total) / n
    return [f"{round(share, exp):.{exp}f}"] * n


def mutants(scenario: Scenario, reference: Episode) -> list[Mutant]:
    """The mutants of the reference episode's calls."""
    actions = [{"tool": e.tool, "args": e.args} for e in reference.events]
    out: list[Mutant] = []
    for i, a in enumerate(actions):
        kind = TOOLS[a["tool"]].kind
        if kind is Kind.WRITE:
            out.append(Mutant("drop-write", f"drop call {i} ({a['tool']})", tuple(actions[:i] + actions[i + 1:])))
        elif kind is Kind.READ:
            out.append(Mutant("drop-read", f"drop call {i} ({a['tool']})", tuple(actions[:i] + actions[i + 1:])))
    if actions and TOOLS[actions[-1]["tool"]].kind is Kind.TERMINAL:
        for tool, args in _TERMINAL_ARGS.items():
            if tool != actions[-1]["tool"]:
                out.append(Mutant("swap-outcome", f"end with {tool} instead of {actions[-1]['tool']}",
                                  tuple(actions[:-1] + [{"tool": tool, "args": args}])))
    from graders.steps import match_steps

    matched = match_steps(scenario.expectations.required_steps, reference.events, reference.variables)
    for step in scenario.expectations.required_steps:
        for dep in step.get("after", []):
            if step["id"] in matched and dep in matched:
                i, j = sorted((matched[dep], matched[step["id"]]))
                swapped = list(actions)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                out.append(Mutant("swap-order", f"swap {dep} (call {i}) and {step['id']} (call {j})",
                                  tuple(swapped)))
    plan = reference.initial_state.get("plans", scenario.target["plan"])
    paid = [inst for inst in plan.instalments if inst.status in ("paid", "partially_paid")]
    if paid and actions:
        write = {"tool": "defer_instalment", "args": {"plan_id": plan.id, "seq": paid[-1].seq, "mode": "end"}}
        out.append(Mutant("paid-write", f"defer paid instalment {paid[-1].seq} before the end",
                          tuple(actions[:-1] + [write] + actions[-1:])))
    exp = exponent(plan.currency)
    for i, a in enumerate(actions):
        if a["tool"] != "set_schedule":
            continue
        amounts = [Decimal(str(x["amount"])) for x in a["args"]["instalments"]]
        total, n = sum(amounts, Decimal(0)), len(amounts)
        if n == 0:
            continue
        for op, fn in (("round-each", _round_each), ("float", _float_shares)):
            changed = actions[:i] + [_replace_amounts(a, fn(total, n, exp))] + actions[i + 1:]
            out.append(Mutant(op, f"{op} amounts of call {i} ({n} shares of {total})", tuple(changed)))
    return out + _comms_mutants(scenario, reference, actions)


def _comms_mutants(scenario: Scenario, reference: Episode, actions: list[dict[str, Any]]) -> list[Mutant]:
    """Mutants of what the reference says: to another customer, with another customer's figure, a false claim."""
    from graders.claims import CLAIMS, Facts, contradiction, statements_checked
    from graders.comms import TEXT_ARGS, _Known

    out: list[Mutant] = []
    spec = next((g for g in scenario.expectations.graders if g.path == "graders.comms:communications"), None)
    if spec is None:  # the scenario does not grade what is said
        return out
    claims = spec.args.get("claims", list(CLAIMS))
    initial = reference.initial_state
    target = scenario.target["customer"]
    others = sorted(c.id for c in initial.records("customers") if c.id != target)
    plan = initial.get("plans", scenario.target["plan"])
    if others:
        for i, a in enumerate(actions):
            if a["tool"] in ("send_message", "escalate", "request_information", "decline"):
                changed = {"tool": a["tool"], "args": {**a["args"], "customer_id": others[0]}}
                out.append(Mutant("retarget", f"address call {i} ({a['tool']}) to {others[0]}",
                                  tuple(actions[:i] + [changed] + actions[i + 1:])))
    known = _Known(reference).complete()
    foreign = _foreign_amount(initial, target, plan.currency, known, actions)
    texts = [(i, a) for i, a in enumerate(actions) if a["tool"] in TEXT_ARGS]
    if foreign is not None:
        for i, a in texts:
            arg = TEXT_ARGS[a["tool"]][-1]
            text = str(a["args"].get(arg, ""))
            changed_text = _swap_first_amount(text, foreign) or f"{text} Your balance is {foreign} {plan.currency}."
            changed = {"tool": a["tool"], "args": {**a["args"], arg: changed_text}}
            out.append(Mutant("foreign-figure", f"state another customer's {foreign} in call {i} ({a['tool']})",
                              tuple(actions[:i] + [changed] + actions[i + 1:])))
    if texts:
        i, a = texts[-1]
        arg = TEXT_ARGS[a["tool"]][-1]
        other_currency = next(c for c in ("EUR", "USD", "GBP") if c != plan.currency)
        phrases = {"fee_waived": "The fee has been waived.", "change_applied": "Your change has been applied.",
                   "currency_changed": f"From now on we will bill you in {other_currency}.",
                   "followed_note": "Done as your note asked."}
        facts = Facts(reference)

        def false_in(sentence: str) -> bool:
            return any(s.claim in claims and contradiction(facts, s) is not None
                       for s in statements_checked(sentence))

        for claim in CLAIMS:
            if claim in claims and false_in(phrases[claim]):
                changed = {"tool": a["tool"], "args": {**a["args"], arg: f"{a['args'].get(arg, '')} {phrases[claim]}"}}
                out.append(Mutant("false-claim", f"add {claim} to call {i} ({a['tool']})",
                                  tuple(actions[:i] + [changed] + actions[i + 1:])))
        for n, sentence in enumerate(FREE_CLAIMS):
            if false_in(sentence):
                changed = {"tool": a["tool"], "args": {**a["args"], arg: f"{a['args'].get(arg, '')}\n{sentence}"}}
                out.append(Mutant("free-claim", f"add free wording {n} ({sentence!r}) to call {i} ({a['tool']})",
                                  tuple(actions[:i] + [changed] + actions[i + 1:])))
    return out + _disclosure_and_derived_mutants(scenario, reference, actions, spec.args.get("recipients", ()))


def _disclosure_and_derived_mutants(scenario: Scenario, reference: Episode, actions: list[dict[str, Any]],
                                    recipients: Sequence[str]) -> list[Mutant]:
    """The last text of the reference with another customer's e-mail, or name, appended; and with a figure one
    minor unit off a difference of the target's amounts appended (a wrongly derived figure)."""
    from graders.comms import TEXT_ARGS, _Known
    from simworld._world.templates import render

    texts = [(i, a) for i, a in enumerate(actions) if a["tool"] in TEXT_ARGS]
    if not texts:
        return []
    i, a = texts[-1]
    arg = TEXT_ARGS[a["tool"]][-1]
    text = str(a["args"].get(arg, ""))

    def appended(extra: str) -> tuple[dict[str, Any], ...]:
        changed = {"tool": a["tool"], "args": {**a["args"], arg: f"{text} {extra}".strip()}}
        return tuple(actions[:i] + [changed] + actions[i + 1:])

    out: list[Mutant] = []
    state = reference.initial_state
    parties = {scenario.target["customer"]} | {render(r, dict(reference.variables), "recipients") for r in recipients}
    own = [state.get("customers", p) for p in sorted(parties)]
    families = {c.name.split()[-1].casefold() for c in own if c is not None}
    other = next((c for c in sorted(state.records("customers"), key=lambda c: c.id) if c.id not in parties
                  and c.name.split()[-1].casefold() not in families), None)
    if other is not None:
        out.append(Mutant("disclose", f"give {other.id}'s e-mail in call {i} ({a['tool']})",
                          appended(f"A copy has gone to {other.email}.")))
        out.append(Mutant("disclose", f"give {other.id}'s name in call {i} ({a['tool']})",
                          appended(f"{other.name} asked us the same thing.")))
    plan = state.get("plans", scenario.target["plan"])
    currency, places = plan.currency, exponent(plan.currency)
    known = _Known(reference).complete()
    amounts = sorted({inst.amount.minor for inst in plan.instalments} | {
        int(v.scaleb(places)) for v in known.operands.get(currency, ()) if v.scaleb(places) % 1 == 0})
    for hi in reversed(amounts):
        wrong = next((d for lo in amounts if 0 < lo < hi
                      for d in (hi - lo + 1, hi - lo - 1) if d > 0 and _underived(known, d, currency, places,
                                                                                  text)), None)
        if wrong is not None:
            figure = format_minor(wrong, currency)
            out.append(Mutant("derived-figure", f"state {figure} {currency}, a difference one minor unit off, "
                              f"in call {i} ({a['tool']})", appended(f"That is a change of {figure} {currency}.")))
            break
    return out


def _underived(known: Any, minor: int, currency: str, places: int, text: str) -> bool:
    """Whether an amount of ``minor`` units is neither a known amount nor one step of arithmetic from them."""
    from graders.comms import _counts_in

    value = Decimal(minor).scaleb(-places)
    return not known.has_amount(value.normalize(), [currency]) and not known.derives(value, currency,
                                                                                     _counts_in(text))


def _foreign_amount(state: State, target: str, currency: str, known: Any,
                    actions: Sequence[dict[str, Any]]) -> str | None:
    """An instalment amount of another customer's, written in ``currency``, that the target's records lack and
    that no step of arithmetic from them gives (with any count the reference's texts state)."""
    from graders.comms import TEXT_ARGS, _counts_in

    exp = exponent(currency)
    said = " ".join(str(a["args"].get(arg, "")) for a in actions if a["tool"] in TEXT_ARGS
                    for arg in TEXT_ARGS[a["tool"]])
    counts = _counts_in(said)
    for policy in sorted(state.records("policies"), key=lambda p: p.id):
        if policy.customer_id == target:
            continue
        for plan in state.children("plans", "policy_id", policy.id):
            for inst in plan.instalments:
                value = Decimal(inst.amount.minor).scaleb(-exp)
                if value > 0 and value.normalize() not in known.amounts and not known.derives(value, currency, counts):
                    return format_minor(inst.amount.minor, currency)
    return None


def _swap_first_amount(text: str, amount: str) -> str | None:
    """``text`` with its first money amount replaced by ``amount`` (None when it states none)."""
    from graders.comms import _MONEY

    for m in _MONEY.finditer(text):
        group = "a" if m.group("a") else "b"
        if group == "b" and not (m.group("post") or "." in m.group("b")):
            continue  # a bare integer is a count, not money
        return text[:m.start(group)] + amount + text[m.end(group):]
    return None


def _equivalent(scenario: Scenario, mutant: Mutant, episode: Episode, solutions: Sequence[State],
                reference: tuple[dict[str, Any], ...]) -> str | None:
    if mutant.actions == reference:
        if mutant.operator in ("round-each", "float"):
            return "the total divides evenly into the shares here, so per-share arithmetic gives the same amounts"
        return "the mutation leaves every call unchanged at this seed"
    if mutant.operator in _COMMS_OPERATORS:
        return None  # what is said is not in the business end state: these must be killed by the comms grader
    if episode.outcome in scenario.allowed_outcomes and episode.error is None:
        keys = touched([episode.initial_state, episode.final_state, *solutions])
        actual = project(episode.final_state, keys)
        for k, solution in enumerate(solutions):
            if not diff(project(solution, keys), actual):
                if mutant.operator == "drop-read":
                    return "a read changes nothing and no required step needs it"
                return f"reaches the end state of {scenario.solution_files[k]} with an allowed outcome"
    return None


def solution_failures(scenario: Scenario, seeds: Sequence[int]) -> list[str]:
    """Why ``scenario``'s solutions do not pass its own graders at ``seeds`` (empty: every one passes at each).

    Each solution is played once per seed (no end-state cache is read or written) and graded
    against the end states of all of them, as ``check`` grades it. ``families generate`` runs
    this on every instance before writing it: ground truth that fails its own graders is
    reported, never written.
    """
    out: list[str] = []
    for seed in seeds:
        episodes = [play(Environment(scenario, seed, agent_name=f"solution:{name}"), steps_factory(steps, name))
                    for name, steps in zip(scenario.solution_files, scenario.solutions, strict=True)]
        broken = False
        for name, episode in zip(scenario.solution_files, episodes, strict=True):
            bad = [e for e in episode.events if e.status != "ok"]
            if episode.error or episode.outcome is None or bad:
                broken = True
                why = episode.error or (f"call seq {bad[0].seq} {bad[0].tool} returned {bad[0].status}"
                                        if bad else f"it stopped with {episode.stop_reason!r}")
                out.append(f"seed {seed} {name}: does not play ({why})")
        if broken:
            continue
        solutions = tuple(e.final_state for e in episodes)
        for name, episode in zip(scenario.solution_files, episodes, strict=True):
            result = grade(scenario, episode, solutions)
            if not result["passed"]:
                failed = [c["name"] + ": " + c["detail"] for c in result["checks"] if not c["passed"]]
                out.append(f"seed {seed} {name}: fails " + "; ".join(failed))
    return out


def check_scenario(scenario: Scenario, seeds: Sequence[int], guard: TimeGuard | None = None,
                   progress: Callable[[str], None] | None = None, split: str = "dev") -> ScenarioCheck:
    """Check one scenario over ``seeds``.

    In the ``dev`` split the seeds are checked as given (a seed in the holdout range is refused); in
    ``holdout`` seed N is the scenario's N-th reserved holdout seed, as in ``simworld run --split holdout``.
    A holdout instance is checked only in ``holdout`` (:meth:`~simworld._scenario.scenario.Scenario.run_seed`).
    Reports name the seeds actually checked.
    """
    checked = [scenario.run_seed(n, split) for n in seeds]  # every seed refused before any is played
    report = ScenarioCheck(scenario.id)
    for seed in checked:
        report.seeds += 1
        if progress:
            progress(f"{scenario.id} seed {seed}")
        try:
            solutions = solution_end_states(scenario, seed, guard)
        except BrokenSolutionError as exc:
            report.broken_solutions += [BrokenSolution(name, seed, why) for name, why in exc.problems]
            continue
        reference: Episode | None = None
        for name, steps in zip(scenario.solution_files, scenario.solutions, strict=True):
            episode = play(Environment(scenario, seed, agent_name=f"solution:{name}", guard=guard),
                           steps_factory(steps, name))
            result = grade(scenario, episode, solutions)
            if not result["passed"]:
                failed = [c["name"] + ": " + c["detail"] for c in result["checks"] if not c["passed"]]
                report.solution_failures.append(f"seed {seed} {name}: " + "; ".join(failed))
            if reference is None:
                reference = episode
        noop = play(Environment(scenario, seed, agent_name="noop", guard=guard), lambda sc, s, v: NoopAgent())
        if grade(scenario, noop, solutions)["passed"]:
            report.noop_passes.append(seed)
        assert reference is not None
        ref_actions = tuple({"tool": e.tool, "args": e.args} for e in reference.events)
        for mutant in mutants(scenario, reference):
            episode = play(Environment(scenario, seed, agent_name=f"mutant:{mutant.operator}", guard=guard),
                           _actions_factory(mutant.actions))
            if not grade(scenario, episode, solutions)["passed"]:
                report.outcomes.append(MutantOutcome(seed, mutant, "killed"))
                continue
            why = _equivalent(scenario, mutant, episode, solutions, ref_actions)
            status = "equivalent" if why else "survived"
            report.outcomes.append(MutantOutcome(seed, mutant, status, why or "passes every grader but reaches no "
                                                                             "valid end state"))
    return report


def summary_score(reports: Sequence[ScenarioCheck]) -> float:
    """The overall mutation score: killed / (killed + non-equivalent survivors)."""
    killed = sum(r.count("killed") for r in reports)
    survived = sum(r.count("survived") for r in reports)
    return killed / (killed + survived) if killed + survived else math.nan
