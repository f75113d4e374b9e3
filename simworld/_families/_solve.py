"""The solver: from the perturbed world and an instance's parameters to its outcome class and solutions.

Nothing here restates a rule. For each intent the solver plays the intent's act path on a
scratch copy of the perturbed world, with the world's own tools (so the quotes are the
world's), and asks the authority grader's rule code (``graders.authority``, the code that
grades agents, reading its limits from the policy store) which of the policy's rules the
path's writes break; a call the system denies is a system rule. The rule decides the
outcome class:

================================== =========================================
nothing broken                     act
``fee_waiver`` above authority     escalate
``fee_waiver`` 12-month count      decline
``escalation`` (refund threshold)  escalate
``split_bounds``, ``due_day``,     decline
``deferral``, a denied call
``verified_holder``                request information or decline (both valid)
================================== =========================================

Two intents in one request combine: both done is act; one done and one refused is act
(the refusal is explained in the closing text, or in a message); both refused is one
decline, or one escalation (one question) when one of them must be escalated (needs
information), its text saying why the other is declined. An escalation or a question
beside an intent that is done (an escalation changes no business record, so it cannot
close an episode that writes), an escalation beside a question, or one intent whose
outcome two rules pull apart, has no single right answer the policy text states, and the
solver says so (:class:`Unclear`): such instances are not generated.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from simworld._families._intents import Call, Intent
from simworld._world.clock import SimClock
from simworld._world.perturb import Perturbed
from simworld._world.policy import PolicyStore
from simworld._world.templates import resolve_args
from simworld._world.tools import TOOLS
from simworld.errors import FamilyError

__all__ = ["Solved", "Unclear", "classify", "solve"]

_RULE_OUTCOME = {"fee_waiver:authority": "escalate", "fee_waiver:count": "decline", "escalation": "escalate",
                 "split_bounds": "decline", "due_day": "decline", "deferral:count": "decline",
                 "deferral:overdue": "decline", "system": "decline", "verified_holder": "permission"}
_PERMISSION_QUESTION = ("Only the verified policy holder can change this plan (rule verified_holder). Could the "
                        "holder contact us and verify their identity, so that we can go ahead?")
_PERMISSION_REASON = ("Only a verified policy holder may change a plan (rule verified_holder), so this request "
                      "cannot be carried out until the holder is verified. Your plan stays as it is.")


class Unclear(Exception):  # noqa: N818 - a signal, not an error: the instance is skipped
    """The policy text gives this instance no single right outcome (two rules disagree).

    ``category`` is a short name for the kind of reason (what ``families generate`` counts skips by);
    the message says what exactly.
    """

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


@attrs.frozen
class Verdict:
    """One intent's classification in one world: the outcome and the rule that decided it ("" for act)."""

    outcome: str
    rule: str = ""


@attrs.frozen
class Solved:
    """An instance's ground truth: allowed outcomes, the deciding rules, solutions by label, required steps."""

    outcomes: tuple[str, ...]
    rules: tuple[str, ...]
    solutions: dict[str, list[dict[str, Any]]]
    required_steps: list[dict[str, Any]]
    must_say: list[dict[str, Any]] = attrs.field(factory=list)


def _resolve(args: Any, variables: Mapping[str, Any], named: Mapping[str, Any]) -> Any:
    if isinstance(args, dict):
        if set(args) == {"$ref"}:
            name, _, path = args["$ref"].partition(".")
            value = named[name]
            for part in path.split(".") if path else []:
                value = value[part]
            return value
        return {k: _resolve(v, variables, named) for k, v in args.items()}
    if isinstance(args, list):
        return [_resolve(v, variables, named) for v in args]
    return resolve_args(args, dict(variables), [], "family solver")


def classify(intent: Intent, params: Mapping[str, Any], world: Perturbed, store: PolicyStore) -> Verdict:
    """Play ``intent``'s act paths on a scratch copy of ``world``; the rules its writes break decide the outcome.

    Raises:
        Unclear: when two rules call for different outcomes, or two act paths disagree.
        FamilyError: when a call of the act path is refused as a bad argument: the intent and the
            world disagree about what the request is (wrong ground truth, never skipped quietly).
    """
    if intent.fixed is not None:
        return Verdict(intent.fixed, intent.name)
    from graders.authority import _clauses  # the rule code that grades agents (imports point down: graders)

    seen: set[Verdict] = set()
    for reads, writes, _label in intent.paths(params):
        scratch = _world(world, store)
        named: dict[str, Any] = {}
        rules: set[str] = set()
        for call in [*reads, *writes]:
            event = scratch.call(call.tool, _resolve(call.args, world.vars, named))
            if event.status == "denied":
                rules.add("system")
                break
            if event.status != "ok":
                raise FamilyError(f"intent {intent.name!r} with {dict(params)!r}: {call.tool} does not play on this "
                                  f"world ({event.result.get('error')}); the act path and the world disagree.")
            if call.name:
                named[call.name] = event.result
            if event.kind == "write":
                before = scratch.states[-2] if len(scratch.states) > 1 else world.state
                shim = types.SimpleNamespace(policy=store)
                for rule, clause, detail in _clauses(shim, event, before, scratch.states[-1]):
                    rules.add(f"{rule}:{clause}" if clause else _condition(rule, detail))
        seen.add(_decide(rules))
    if len(seen) != 1:
        raise Unclear("paths disagree", f"the act paths of {intent.name!r} disagree: {sorted(map(str, seen))}")
    return seen.pop()


def _condition(rule: str, detail: str) -> str:
    """The rule, with which of its conditions applies where the refusal must name it (a deferral: the term's count
    is used, or an instalment is too far overdue); the authority grader's detail says which."""
    if rule == "deferral":
        return "deferral:count" if detail.startswith("deferral number") else "deferral:overdue"
    return rule


def _decide(rules: set[str]) -> Verdict:
    if "verified_holder" in rules:  # nobody but a verified holder changes anything, whatever else applies
        return Verdict("permission", "verified_holder")
    outcomes = {_RULE_OUTCOME[r] for r in rules}
    if len(outcomes) > 1:
        raise Unclear("rules conflict", f"rules {sorted(rules)} call for different outcomes {sorted(outcomes)}")
    return Verdict(outcomes.pop(), ",".join(sorted(rules))) if outcomes else Verdict("act")


def _world(world: Perturbed, store: PolicyStore) -> Any:
    from simworld._world.world import World

    return World(world.state, SimClock(world.clock), store, dict(TOOLS))


def _assemble(calls: Sequence[Call], prefix: str = "") -> list[dict[str, Any]]:
    """Calls as solution lines, each ``{"$ref": "name.path"}`` turned into ``{"$from": [index, "path"]}``."""
    index: dict[str, int] = {}
    out = []
    for i, call in enumerate(calls):
        out.append({"tool": call.tool, "args": _refs(call.args, index)})
        if call.name:
            index[call.name] = i
    return out


def _refs(args: Any, index: Mapping[str, int]) -> Any:
    if isinstance(args, dict):
        if set(args) == {"$ref"}:
            name, _, path = args["$ref"].partition(".")
            return {"$from": [index[name], path]}
        return {k: _refs(v, index) for k, v in args.items()}
    if isinstance(args, list):
        return [_refs(v, index) for v in args]
    return args


def _named(calls: list[Call], tag: str) -> list[Call]:
    """Calls with their names (and the names they refer to) made unique to one intent of a request."""
    def ref(v: Any) -> Any:
        if isinstance(v, dict):
            if set(v) == {"$ref"}:
                return {"$ref": f"{tag}{v['$ref']}"}
            return {k: ref(x) for k, x in v.items()}
        if isinstance(v, list):
            return [ref(x) for x in v]
        return v
    return [Call(c.tool, ref(c.args), f"{tag}{c.name}" if c.name else "") for c in calls]


def solve(intents: Sequence[tuple[Intent, Mapping[str, Any]]], verdicts: Sequence[Verdict]) -> Solved:
    """The solutions and required steps of a request of one or two intents, given each intent's verdict.

    Raises:
        Unclear: for a combination the policy gives no single answer (an escalation with anything else).
    """
    outcomes = [v.outcome for v in verdicts]
    rules = tuple(v.rule for v in verdicts)
    if "permission" in outcomes:
        return _permission(rules)
    strong = sorted(set(outcomes) & {"escalate", "request_information"})
    if len(intents) > 1 and strong and ("act" in outcomes or len(strong) > 1):
        # An escalation or an information request changes no business record (invariant 9), so it cannot close
        # an episode that also carries out the other intent; and the policy does not rank the two against each other.
        raise Unclear("no single answer", f"a request combining {outcomes} has no single right answer in the "
                                          "policy text")
    done = [k for k, o in enumerate(outcomes) if o == "act"]
    refused = [k for k, o in enumerate(outcomes) if o != "act"]
    if done:
        solved = _act(intents, done, refused, verdicts, rules)
        if len(intents) == 1 and intents[0][0].escalation is not None:
            return _or_escalate(intents[0], solved)
        return solved
    return _refuse(intents, verdicts, rules)


def _or_escalate(item: tuple[Intent, Mapping[str, Any]], acted: Solved) -> Solved:
    """Acting or escalating, both right: the act solutions, and an escalation that says why a colleague must confirm.

    The required step is the act path's first write or the escalation: an escalation changes no business record, so
    without it, finishing with nothing done would match the escalation's end state; the end state (the writes of
    acting, or none) tells a right answer from a wrong one.
    """
    intent, params = item
    assert intent.escalation is not None
    reason = intent.escalation(params)
    escalate = Call("escalate", {"reason": reason, "customer_id": "{customer_id}"})
    solutions = dict(acted.solutions)
    solutions["escalate"] = _assemble([_read_call(intent, params), escalate])
    solutions["escalate-without-read"] = _assemble([escalate])
    first_write = intent.write_steps(params)[0]["tool"]
    return Solved(("act", "escalate"), acted.rules, solutions, [{"id": "answer", "tool": [first_write, "escalate"]}],
                  acted.must_say)


def _permission(rules: tuple[str, ...]) -> Solved:
    read = {"tool": "get_customer", "args": {"customer_id": "{customer_id}"}}
    return Solved(("request_information", "decline"), rules, {
        "": [read, {"tool": "request_information", "args": {"question": _PERMISSION_QUESTION,
                                                            "customer_id": "{customer_id}"}}],
        "decline": [read, {"tool": "decline", "args": {"reason": _PERMISSION_REASON}}],
    }, [{"id": "answer", "tool": ["request_information", "decline"]}])


def _act(intents: Sequence[tuple[Intent, Mapping[str, Any]]], done: list[int], refused: list[int],
         verdicts: Sequence[Verdict], rules: tuple[str, ...]) -> Solved:
    tags = ["a-", "b-"] if len(intents) > 1 else [""]
    alternatives = [intents[k][0].paths(intents[k][1]) for k in done]
    count = max(len(a) for a in alternatives)
    reads_refused = [_named([_read_call(*intents[k])], tags[k]) for k in refused]
    told = " ".join(_reason(intents[k], verdicts[k]) for k in refused)
    solutions: dict[str, list[dict[str, Any]]] = {}
    for n in range(count):
        reads: list[Call] = []
        writes: list[Call] = []
        labels = []
        for k, alts in zip(done, alternatives, strict=True):
            r, w, label = alts[n % len(alts)]
            reads += _named(r, tags[k])
            writes += _named(w, tags[k])
            labels.append(label)
        for extra in reads_refused:
            reads += extra
        summaries: list[Any] = [intents[k][0].summary(intents[k][1]) for k in done]
        if any(isinstance(s, dict) for s in summaries):  # a figure the closing text states as quoted
            ref = next(s for s in summaries if isinstance(s, dict))
            summary: Any = {"$ref": tags[done[0]] + ref["$ref"]}
        else:
            summary = " ".join(summaries).strip()
        finish = Call("finish", {"summary": summary})
        label = "-".join(x for x in labels if x)
        # What was refused is told to the customer in a message; the text passed to finish, which the customer
        # reads too, may say it instead.
        message = Call("send_message", {"customer_id": "{customer_id}", "subject": "Your request", "body": told})
        told_calls = [message] if told else []
        solutions[label if n else ""] = _assemble([*reads, *writes, *told_calls, finish])
        if n == 0:
            lookup = Call("find_customer", {"query": "{email}"})
            if told:
                solutions["told-in-finish"] = _assemble(
                    [*reads, *writes, Call("finish", {"summary": f"{summary} {told}".strip()})])
                solutions["with-message"] = _assemble([lookup, *reads, *writes, message, finish])
            elif isinstance(summary, dict):
                message = Call("send_message", {"customer_id": "{customer_id}", "subject": "Your figure",
                                                "body": summary})
                done_text = Call("finish", {"summary": "Sent the figure you asked for."})
                solutions["with-message"] = _assemble([lookup, *reads, *writes, message, done_text])
            else:
                solutions["with-lookup"] = _assemble([lookup, *reads, *writes, finish])
    steps: list[dict[str, Any]] = []
    ends: list[str] = []
    for k in done:
        intent, params = intents[k]
        read_id = f"{tags[k]}read"
        steps.append({"id": read_id, **intent.read_step(params)})
        for j, write in enumerate(intent.write_steps(params)):
            steps.append({"id": f"{tags[k]}write{j}", **write, "after": [read_id]})
            ends.append(f"{tags[k]}write{j}")
        if not intent.write_steps(params):
            ends.append(read_id)
    for k in refused:
        intent, params = intents[k]
        steps.append({"id": f"{tags[k]}read", **intent.read_step(params)})
        ends.append(f"{tags[k]}read")
    steps.append({"id": "done", "tool": "finish", "after": ends})
    must_say = []
    for k in done:
        intent, params = intents[k]
        if isinstance(intent.summary(params), dict):
            read = intent.read_step(params)
            must_say.append({"tool": read["tool"], "args": read["args"], "field": "payoff"})
    return Solved(("act",), rules, solutions, steps, must_say)


def _read_call(intent: Intent, params: Mapping[str, Any]) -> Call:
    """The act path's read that the intent's required read step names (a refusal still reads what decides it)."""
    step = intent.read_step(params)
    tools = [step["tool"]] if isinstance(step["tool"], str) else step["tool"]
    reads = intent.paths(params)[0][0]
    call = next((c for c in reads if c.tool in tools), reads[0])
    return Call(call.tool, call.args)


def _reason(item: tuple[Intent, Mapping[str, Any]], verdict: Verdict) -> str:
    intent, params = item
    rule = "fee_waiver:authority" if "fee_waiver:authority" in verdict.rule else verdict.rule
    return intent.reasons(params, rule)


def _refuse(intents: Sequence[tuple[Intent, Mapping[str, Any]]], verdicts: Sequence[Verdict],
            rules: tuple[str, ...]) -> Solved:
    # Both refused: one escalation (or one question) when an intent needs it, the other's refusal said in it.
    outcome = next((v.outcome for v in verdicts if v.outcome != "decline"), verdicts[0].outcome)
    tool = {"decline": "decline", "escalate": "escalate", "request_information": "request_information"}[outcome]
    arg = "question" if tool == "request_information" else "reason"
    text = " ".join(_reason(item, v) for item, v in zip(intents, verdicts, strict=True))
    fixed = all(i.fixed for i, _ in intents)
    tags = ["a-", "b-"] if len(intents) > 1 else [""]
    reads: list[Call] = []
    for call in (_read_call(i, p) for i, p in intents):
        if call not in reads:  # two intents that read the same record read it once
            reads.append(call)
    terminal = Call(tool, {arg: text, "customer_id": "{customer_id}"})
    solutions = {"": _assemble([*reads, terminal]),
                 "with-lookup": _assemble([Call("find_customer", {"query": "{email}"}), *reads,
                                           Call(tool, {arg: text})])}
    if fixed:
        solutions["without-read"] = _assemble([Call(tool, {arg: text})])
        steps: list[dict[str, Any]] = [{"id": "answer", "tool": tool}]
    else:
        steps = [{"id": f"{tags[k]}read", **i.read_step(p)} for k, (i, p) in enumerate(intents)]
        steps.append({"id": "answer", "tool": tool, "after": [s["id"] for s in steps]})
    return Solved((outcome,), rules, solutions, steps)
