"""The required-steps grader: the calls a correct agent must make, in an order a DAG allows.

A step names a tool (or a list of alternatives) and a subset of arguments that must
match (``"{var}"`` templates are filled from the episode's variables); ``after`` lists
steps that must come first. Only calls that returned ``ok`` count. Each step is
matched to the earliest call after the calls matched to the steps it follows; if the
only match comes too early, the step still scores but the ordering is reported as a
violation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from simworld._grading.verdict import Check, Verdict
from simworld._world.templates import resolve_args
from simworld.errors import ScenarioError


def same(expected: Any, actual: Any) -> bool:
    """Equality for arguments: amounts compare as decimals ("333.30" equals 333.3), containers recursively."""
    if expected == actual and type(expected) is type(actual):
        return True
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(same(a, b) for a, b in zip(expected, actual, strict=True))
    if isinstance(expected, (str, int, float)) and isinstance(actual, (str, int, float)):
        if isinstance(expected, bool) or isinstance(actual, bool):
            return False
        try:
            return Decimal(str(expected)) == Decimal(str(actual))
        except InvalidOperation:
            return False
    return False


def matches(step: Mapping[str, Any], event: Any, variables: Mapping[str, Any]) -> bool:
    """Whether ``event`` is an ok call of the step's tool with the step's arguments."""
    tools = step["tool"] if isinstance(step["tool"], list) else [step["tool"]]
    if event.status != "ok" or event.tool not in tools or not isinstance(event.args, dict):
        return False
    wanted = resolve_args(step.get("args", {}), dict(variables), [], f"required step {step['id']!r}")
    return all(k in event.args and same(v, event.args[k]) for k, v in wanted.items())


def topological(steps: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The steps in an order where each comes after those it names in ``after`` (ValueError on a cycle)."""
    by_id = {s["id"]: s for s in steps}
    done: list[Mapping[str, Any]] = []
    state: dict[str, int] = {}

    def visit(sid: str, path: tuple[str, ...]) -> None:
        if state.get(sid) == 2:
            return
        if state.get(sid) == 1:
            raise ValueError(f"required_steps: 'after' forms a cycle: {' -> '.join((*path, sid))}")
        state[sid] = 1
        for dep in by_id[sid].get("after", []):
            visit(dep, (*path, sid))
        state[sid] = 2
        done.append(by_id[sid])

    for s in steps:
        visit(s["id"], ())
    return done


def match_steps(steps: Sequence[Mapping[str, Any]], events: Sequence[Any],
                variables: Mapping[str, Any]) -> dict[str, int]:
    """The index of the event each step is matched to (unmatched steps are absent).

    A step takes the earliest matching call after the calls matched to the steps it
    follows; if its only matches come too early, it takes the earliest (an order violation).
    """
    return _match(topological(steps), events, variables)


def _match(ordered: Sequence[Mapping[str, Any]], events: Sequence[Any],
           variables: Mapping[str, Any]) -> dict[str, int]:
    """:func:`match_steps` over steps already in topological order.

    What :func:`matches` decides call by call, with each step's arguments filled in once (when the first
    ok call of its tool is met) rather than once per call, and only the calls of its tools looked at.
    """
    filled = dict(variables)
    calls: dict[str, list[int]] = {}  # the ok calls (with arguments to compare) of each tool, in order
    for i, e in enumerate(events):
        if e.status == "ok" and isinstance(e.args, dict):
            calls.setdefault(e.tool, []).append(i)
    matched: dict[str, int] = {}
    for step in ordered:
        tools = step["tool"] if isinstance(step["tool"], list) else [step["tool"]]
        candidates = calls.get(tools[0], []) if len(tools) == 1 else \
            sorted({i for tool in tools for i in calls.get(tool, ())})
        wanted: Mapping[str, Any] | None = None
        hits = []
        for i in candidates:
            if wanted is None:
                wanted = resolve_args(step.get("args", {}), filled, [], f"required step {step['id']!r}")
            args = events[i].args
            if all(k in args and same(v, args[k]) for k, v in wanted.items()):
                hits.append(i)
        if not hits:
            continue
        floor = max((matched[d] for d in step.get("after", []) if d in matched), default=-1)
        in_order = [i for i in hits if i > floor]
        matched[step["id"]] = in_order[0] if in_order else hits[0]
    return matched


#: Steps in topological order, by the steps as JSON: a scenario's steps are ordered once per process.
_ORDERED: dict[bytes, list[Mapping[str, Any]]] = {}
_ORDERED_SIZE = 256


def _ordered(steps: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """:func:`topological`, worked out once per process for the same steps."""
    try:
        key = orjson.dumps(steps, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not JSON values: order them every time
        return topological(steps)
    ordered = _ORDERED.get(key)
    if ordered is None:
        ordered = topological(steps)
        if len(_ORDERED) >= _ORDERED_SIZE:
            _ORDERED.clear()
        _ORDERED[key] = ordered
    return ordered


def _expected(step: Mapping[str, Any], variables: Mapping[str, Any]) -> Any:
    """The arguments a step asks for, filled from this episode's variables (as written if they cannot be)."""
    try:
        return resolve_args(step.get("args", {}), dict(variables), [], f"required step {step['id']!r}")
    except ScenarioError:
        return step.get("args", {})


def required_steps(episode: Any, steps: Sequence[Mapping[str, Any]]) -> Verdict:
    """Pass if every required step was made, each after the steps it must follow.

    Args:
        episode: The sealed episode.
        steps: ``[{"id": ..., "tool": NAME or [NAMES], "args": {...}, "after": [ids]}, ...]``.
    """
    events = list(episode.events)
    ordered = _ordered(steps)
    matched = _match(ordered, events, episode.variables)
    step_scores: dict[str, float] = {}
    violations: list[dict[str, Any]] = []
    checks: list[Check] = []
    for step in ordered:
        sid = step["id"]
        if sid not in matched:
            step_scores[sid] = 0.0
            checks.append(Check(f"step:{sid}", False, f"no ok call of {step['tool']} with "
                                                       f"{_expected(step, episode.variables)}"))
            continue
        index = matched[sid]
        step_scores[sid] = 1.0
        checks.append(Check(f"step:{sid}", True, f"seq {events[index].seq} {events[index].tool}"))
        for dep in step.get("after", []):
            if dep in matched and matched[dep] >= index:
                violations.append({"step": sid, "after": dep, "seq": events[index].seq,
                                   "detail": f"{sid} (seq {events[index].seq}) came before {dep} "
                                             f"(seq {events[matched[dep]].seq})"})
                checks.append(Check(f"order:{sid}-after-{dep}", False, violations[-1]["detail"]))
            elif dep in matched:
                checks.append(Check(f"order:{sid}-after-{dep}", True, ""))
    return Verdict.from_checks(checks, step_scores=step_scores, order_violations=violations)
