"""The grading contract: resolving graders by dotted path, running them, and the result JSON.

A grader is ``grade(episode, **args) -> Verdict``. It is named in task.json by a
dotted path (``module:function``) and resolved when the scenario loads: the first
parameter must be the positional ``episode``; a parameter named ``messages``,
``transcript``, ``result`` or ``history`` is refused, because graders judge what the
agent did, not what it said. ``args`` are bound at load time, so a missing or unknown
argument fails the scenario's load rather than its first episode. One argument is
supplied by the harness at grade time: a grader that declares ``solutions`` receives
the end states of every valid solution at the episode's seed.

Trust model: custom graders and hooks are trusted code that runs in the harness's process.
The signature check stops a grader from *asking for* the transcript by mistake (and refuses
``*args``, ``**kwargs`` and parameters that are no grader input); it is not a sandbox: a
grader module can import anything and read anything in the process. Agents are the
untrusted party: every action they return is checked before use.

Graders run as a conjunction: the episode passes only if every check of every
grader passes. A grader that raises becomes a failed check carrying the error,
never a crash of the run and never a pass.
"""

from __future__ import annotations

import importlib
import inspect
import operator
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from simworld._grading.verdict import Check, Verdict
from simworld._world.state import State
from simworld.errors import ScenarioError, describe_exception

__all__ = ["FORBIDDEN_PARAMS", "GATES", "HARNESS_ARGS", "PARTS", "GraderSpec", "gates_failed", "grade_episode",
           "resolve_callable", "resolve_grader", "score"]

_PASSED = operator.attrgetter("passed")

#: Parameter names that would hand a grader the agent's words; refused at load.
FORBIDDEN_PARAMS = ("messages", "transcript", "result", "history")
#: Arguments the harness binds at grade time rather than task.json.
HARNESS_ARGS = ("solutions",)
#: The parts partial credit is kept apart by, in report order.
PARTS = ("outcome", "state", "steps", "forbidden", "authority", "money", "comms", "requires", "custom")
#: Parts that are gates: a wrong outcome class, a forbidden change, an unauthorised action, a
#: communication to the wrong party or a text giving away another customer's details makes ``total`` 0,
#: whatever else went right.
GATES = ("outcome", "forbidden", "authority", "recipients", "disclosure")
_GATE_SET = frozenset(GATES)
# The gates a grader's findings fail when not empty, and the key of those findings.
_GATE_KEYS = (("forbidden", "forbidden_changes"), ("authority", "unauthorised_actions"),
              ("recipients", "wrong_recipients"), ("disclosure", "disclosures"))


@attrs.frozen(eq=False)
class GraderSpec:
    """A resolved grader: its dotted path, function, bound arguments and the part it scores."""

    path: str
    fn: Callable[..., Verdict]
    args: Mapping[str, Any]
    part: str
    wants_solutions: bool = False

    def run(self, episode: Any, solutions: Sequence[State]) -> Verdict:
        """Call the grader; the caller turns an exception into a failed check."""
        if self.wants_solutions:  # read-only; a lazy sequence plays each solution when first read
            verdict = self.fn(episode, **self.args, solutions=solutions)
        else:
            verdict = self.fn(episode, **self.args)
        if not isinstance(verdict, Verdict):
            raise TypeError(f"grader {self.path} returned {type(verdict).__name__}, not a Verdict")
        return verdict


def resolve_callable(path: Any, where: str, search: Path | None = None) -> Callable[..., Any]:
    """Import ``module:function`` (``search`` is tried as an import root too), or raise a ScenarioError."""
    if not isinstance(path, str) or path.count(":") != 1:
        raise ScenarioError(f"{where}: {path!r} is not a dotted path; write 'module:function', "
                            "e.g. 'graders.state:expected_final_state'.")
    module_name, attr = path.split(":")
    if search is not None and str(search) not in sys.path:
        sys.path.append(str(search))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ScenarioError(f"{where}: cannot import {module_name!r} for {path!r} ({exc}).") from None
    except Exception as exc:  # a syntax error in it, or it raised while importing: the module's bug, named
        raise ScenarioError(f"{where}: importing {module_name!r} for {path!r} failed: "
                            f"{describe_exception(exc)}; fix that module.") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ScenarioError(f"{where}: {module_name!r} has no function {attr!r}.")
    return fn


def resolve_grader(path: Any, args: Any, where: str, *, part: str = "custom", search: Path | None = None) -> GraderSpec:
    """Resolve and check a grader at load time; bind its ``args``."""
    fn = resolve_callable(path, where, search)
    if not isinstance(args, dict):
        raise ScenarioError(f"{where}: args of {path!r} must be an object but got {args!r}.")
    params = list(inspect.signature(fn).parameters.values())
    if not params or params[0].name != "episode" or params[0].kind not in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        raise ScenarioError(f"{where}: grader {path!r} must take the episode as its first positional parameter, "
                            "named 'episode': def grade(episode, **args) -> Verdict.")
    for p in params:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            star = "*" if p.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            raise ScenarioError(
                f"{where}: grader {path!r} takes {star}{p.name}; name every input instead (episode, the args "
                "task.json gives, or solutions), so that nothing else can be passed to it by mistake.")
        if p.name in FORBIDDEN_PARAMS:
            raise ScenarioError(
                f"{where}: grader {path!r} takes a parameter named {p.name!r}; graders judge what the agent did "
                "(episode.events, the states), never what it said, so messages, transcript, result and history "
                "are refused.")
    wants_solutions = any(p.name == "solutions" for p in params[1:])
    for name in HARNESS_ARGS:
        if name in args:
            raise ScenarioError(f"{where}: {path!r} args set {name!r}, which the harness supplies; remove it.")
    for p in params[1:]:
        if p.name not in args and p.name not in HARNESS_ARGS and p.default is inspect.Parameter.empty:
            raise ScenarioError(f"{where}: grader {path!r} takes {p.name!r}, which is not a grader input: give it in "
                                f"the grader's args, give it a default, or remove it (the harness supplies only "
                                f"{', '.join(HARNESS_ARGS)}).")
    probe = {**args, **({"solutions": ()} if wants_solutions else {})}
    try:
        inspect.signature(fn).bind(None, **probe)
    except TypeError as exc:
        raise ScenarioError(f"{where}: args {sorted(args)!r} do not fit grader {path!r}: {exc}.") from None
    return GraderSpec(path, fn, dict(args), part, wants_solutions)


def gates_failed(found: Mapping[str, Any]) -> list[str]:
    """The gates an episode failed (see :data:`GATES`), from what its graders found."""
    failed = []
    if "outcome_class_correct" in found and not found["outcome_class_correct"]:
        failed.append("outcome")
    for gate, key in _GATE_KEYS:
        if found.get(key):
            failed.append(gate)
    # A required call never made: whatever else matches, the agent did not do the work (an agent that ends at once
    # leaves most of the world as the answer has it, which must not read as most of the way there).
    for step_score in (found.get("step_scores") or {}).values():
        if step_score < 1.0:
            failed.append("steps")
            break
    return failed


def score(parts: Mapping[str, float], weights: Mapping[str, float], found: Mapping[str, Any], *,
          error: bool = False) -> float:
    """``total``: 0 when the agent crashed, a gate failed or a required step was never made, else the weighted mean
    of the other parts.

    The gate parts (outcome, forbidden, authority) score nothing once passed: passing them
    is what earns the right to partial credit, shared among the remaining parts (state,
    steps, money, comms, requires, custom) by their weights. With no part left, a passed
    gate scores 1.
    """
    if error or gates_failed(found):
        return 0.0
    # Summed in the parts' order, as floats add: the total is the same to the last bit on every run.
    rest = [(v, weights.get(p, 1.0)) for p, v in parts.items() if p not in _GATE_SET]
    weight_sum = sum([w for _, w in rest])
    if not rest or not weight_sum:
        return 1.0
    return sum([v * w for v, w in rest]) / weight_sum


def grade_episode(graders: Sequence[GraderSpec], episode: Any, solutions: Sequence[State],
                  weights: Mapping[str, float]) -> dict[str, Any]:
    """Run every grader; return the grading fields of the result JSON."""
    checks: list[Check] = []
    part_scores: dict[str, list[float]] = {}
    found: dict[str, Any] = {}
    raised: list[str] = []
    if episode.error is not None:
        checks.append(Check("agent_ran", False, episode.error))
    for spec in graders:
        try:
            verdict = spec.run(episode, solutions)
        except Exception as exc:  # a broken grader is a failed check, never a crash or a pass
            checks.append(Check(spec.path, False, f"grader raised {type(exc).__name__}: {exc}"))
            raised.append(f"grader {spec.path} raised " + describe_exception(exc, frames=True))
            part_scores.setdefault(spec.part, []).append(0.0)
            continue
        checks.extend(verdict.checks)
        part_scores.setdefault(spec.part, []).append(verdict.partial)
        for key, value in verdict.data.items():
            prior = found.get(key)
            found[key] = prior + value if isinstance(value, list) and isinstance(prior, list) else value
    parts = {p: round(sum(v) / len(v), 4) for p in PARTS if (v := part_scores.get(p))}
    passed = bool(checks) and all(map(_PASSED, checks))
    total = score(parts, weights, found, error=episode.error is not None)
    return {
        "passed": passed,
        "total": round(total, 4),
        "parts": parts,
        "outcome_class_correct": bool(found.get("outcome_class_correct", False)),
        "state_diff": found.get("state_diff", []),
        "step_scores": found.get("step_scores", {}),
        "order_violations": found.get("order_violations", []),
        "unauthorised_actions": found.get("unauthorised_actions", []),
        "forbidden_changes": found.get("forbidden_changes", []),
        "wrong_recipients": found.get("wrong_recipients", []),
        "disclosures": found.get("disclosures", []),
        "unsupported_figures": found.get("unsupported_figures", []),
        "false_claims": found.get("false_claims", []),
        "checks": [c.to_json() for c in checks],
        "harness_error": raised[0] if raised else None,
    }
