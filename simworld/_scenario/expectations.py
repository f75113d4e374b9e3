"""The grading half of task.json: built-in graders, custom graders, hooks and weights, checked at load.

Keys (all optional but ``allowed_outcomes``, which scenario.py checks):

- ``expected_final_state`` (default true): the end state must match a valid solution's;
- ``required_steps``: ``[{"id", "tool", "args", "after"}]``, a DAG;
- ``forbidden_changes`` (default ``["paid_instalments", "currency", "outside_target"]``);
- ``unauthorised_actions`` (default true), ``money_invariants`` (default true, or ``{"even_split": false}``);
- ``communications`` (default true, or an object with the closed keys ``recipients``, ``must_say``,
  ``claims``, ``figures`` and ``disclosure``; see graders/comms.py);
- ``requires``: ``{COUNTER: {"min": N, "max": M}, "stop_reason": REASON}``;
- ``graders``: ``[{"grader": "module:function", "args": {...}}]``, joined to the conjunction;
- ``hooks``: ``{"pre_grade": [GRADER...], "post_run": ["module:function", ...]}``;
- ``weights``: partial-credit weight per part (outcome, state, steps, forbidden, authority, money,
  requires, custom), 1 by default.

A scenario must expect something beyond its outcome (an end state, steps, a requires
block or a grader of its own): an empty set of expectations is a load-time error,
never a silent pass.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson

from simworld._grading.contract import GATES, PARTS, GraderSpec, resolve_callable, resolve_grader
from simworld._world.vocab import COUNTERS, STOP_REASONS
from simworld.errors import ScenarioError

__all__ = ["GRADING_KEYS", "Expectations", "build_expectations"]

GRADING_KEYS = ("expected_final_state", "required_steps", "forbidden_changes", "unauthorised_actions",
                "money_invariants", "communications", "requires", "graders", "hooks", "weights")
_COMMS_KEYS = ("recipients", "must_say", "claims", "figures", "disclosure")
_MUST_SAY_KEYS = ("tool", "args", "field")
_STEP_KEYS = ("id", "tool", "args", "after")
_PATTERN_KEYS = ("name", "path", "where", "after_where", "except")
_GRADER_KEYS = ("grader", "args")
_HOOK_KEYS = ("pre_grade", "post_run")
_BOUND_KEYS = ("min", "max")


@attrs.frozen(eq=False)
class Expectations:
    """A scenario's resolved graders, post-run hooks and part weights."""

    graders: tuple[GraderSpec, ...]
    post_run: tuple[Callable[..., Any], ...]
    weights: dict[str, float]
    required_steps: tuple[dict[str, Any], ...]


def _err(path: Path, msg: str) -> ScenarioError:
    return ScenarioError(f"{path}: {msg}")


def _closed(path: Path, where: str, data: Any, allowed: tuple[str, ...]) -> None:
    if not isinstance(data, dict):
        raise _err(path, f"{where} must be an object but got {data!r}.")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise _err(path, f"unknown key(s) {unknown!r} in {where}; allowed: {', '.join(allowed)}.")


def _steps(path: Path, steps: Any, tools: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    from graders.steps import topological

    if not isinstance(steps, list):
        raise _err(path, f"required_steps must be a list but got {steps!r}.")
    ids: list[str] = []
    for i, step in enumerate(steps):
        where = f"required_steps[{i}]"
        _closed(path, where, step, _STEP_KEYS)
        if not isinstance(step.get("id"), str) or step["id"] in ids:
            raise _err(path, f"{where}.id must be a unique string but got {step.get('id')!r}.")
        names = step.get("tool")
        names = names if isinstance(names, list) else [names]
        for name in names:
            if name not in tools:
                raise _err(path, f"{where}.tool has {name!r}; allowed: {', '.join(tools)}.")
        if not isinstance(step.get("args", {}), dict):
            raise _err(path, f"{where}.args must be an object.")
        ids.append(step["id"])
    for i, step in enumerate(steps):
        after = step.get("after", [])
        if not isinstance(after, list) or any(a not in ids for a in after):
            raise _err(path, f"required_steps[{i}].after must list step ids from {ids!r} but got {after!r}.")
    try:
        topological(steps)
    except ValueError as exc:
        raise _err(path, str(exc)) from None
    return tuple(steps)


def _patterns(path: Path, patterns: Any) -> list[Any]:
    from graders.forbidden import NAMED

    if not isinstance(patterns, list):
        raise _err(path, f"forbidden_changes must be a list but got {patterns!r}.")
    for i, p in enumerate(patterns):
        if isinstance(p, str):
            continue
        where = f"forbidden_changes[{i}]"
        _closed(path, where, p, _PATTERN_KEYS)
        if not isinstance(p.get("path"), str):
            raise _err(path, f"{where} needs a 'path' glob, or use a name: {', '.join(NAMED)}.")
        for key in ("where", "after_where"):
            for field, values in p.get(key, {}).items():
                if not isinstance(values, list):
                    raise _err(path, f"{where}.{key}.{field} must be a list of values but got {values!r}.")
    return patterns


def _requires(path: Path, bounds: Any) -> dict[str, Any]:
    _closed(path, "requires", bounds, (*COUNTERS, "stop_reason"))
    for name, bound in bounds.items():
        if name == "stop_reason":
            values = bound if isinstance(bound, list) else [bound]
            bad = [v for v in values if v not in STOP_REASONS]
            if bad:
                raise _err(path, f"requires.stop_reason has {bad!r}; allowed: {', '.join(STOP_REASONS)}.")
            continue
        _closed(path, f"requires.{name}", bound, _BOUND_KEYS)
        for k, v in bound.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _err(path, f"requires.{name}.{k} must be a number but got {v!r}.")
        if "min" in bound and "max" in bound and bound["min"] > bound["max"]:
            raise _err(path, f"requires.{name} has min {bound['min']!r} > max {bound['max']!r}: no episode could "
                             "pass; swap them or drop one.")
    return bounds


def _communications(path: Path, setting: Any) -> dict[str, Any] | None:
    """The communications grader's args from task.json's ``communications`` (None: turned off)."""
    from graders.comms import CLAIMS
    from simworld._world.tools import TOOLS, Kind

    if setting is False:
        return None
    if setting is True:
        return {}
    _closed(path, "communications", setting, _COMMS_KEYS)
    recipients = setting.get("recipients", [])
    if not isinstance(recipients, list) or not all(isinstance(r, str) and r for r in recipients):
        raise _err(path, f"communications.recipients must be a list of customer ids but got {recipients!r}.")
    claims = setting.get("claims", list(CLAIMS))
    if not isinstance(claims, list) or any(c not in CLAIMS for c in claims):
        raise _err(path, f"communications.claims must be a list drawn from {', '.join(CLAIMS)} but got {claims!r}.")
    figures = setting.get("figures", True)
    if not isinstance(figures, bool):
        raise _err(path, f"communications.figures must be true or false but got {figures!r}.")
    disclosure = setting.get("disclosure", True)
    if not isinstance(disclosure, bool):
        raise _err(path, f"communications.disclosure must be true or false but got {disclosure!r}.")
    must_say = setting.get("must_say", [])
    if not isinstance(must_say, list):
        raise _err(path, f"communications.must_say must be a list but got {must_say!r}.")
    reads = sorted(n for n, t in TOOLS.items() if t.kind is Kind.READ)
    for i, entry in enumerate(must_say):
        _closed(path, f"communications.must_say[{i}]", entry, _MUST_SAY_KEYS)
        if entry.get("tool") not in reads:
            raise _err(path, f"communications.must_say[{i}].tool must be a read tool ({', '.join(reads)}) but got "
                             f"{entry.get('tool')!r}.")
        if not isinstance(entry.get("field"), str) or not isinstance(entry.get("args", {}), dict):
            raise _err(path, f"communications.must_say[{i}] needs a 'field' (a key of the tool's result) and "
                             "'args' as an object.")
    return {"recipients": recipients, "must_say": must_say, "claims": claims, "figures": figures,
            "disclosure": disclosure}


def _custom(path: Path, entries: Any, where: str, search: Path) -> list[GraderSpec]:
    if not isinstance(entries, list):
        raise _err(path, f"{where} must be a list but got {entries!r}.")
    out = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = {"grader": entry}
        _closed(path, f"{where}[{i}]", entry, _GRADER_KEYS)
        out.append(resolve_grader(entry.get("grader"), entry.get("args", {}), f"{path}: {where}[{i}]",
                                  search=search))
    return out


#: Built-in graders whose load-time check passed in this process, by (function, path, part, arguments as JSON):
#: the same function with the same arguments passes again, and inspect.signature is most of a suite's load.
_CHECKED: dict[tuple[Any, str, str, bytes], bool] = {}
_CHECKED_SIZE = 4096


def _built_in(path: str, args: dict[str, Any], where: str, *, part: str) -> GraderSpec:
    """:func:`resolve_grader` for a grader of ``graders/``, the check of its signature and ``args`` done once."""
    fn = resolve_callable(path, where)
    try:
        key = (fn, path, part, orjson.dumps(args, option=orjson.OPT_SORT_KEYS))
        wants_solutions = _CHECKED.get(key)
    except TypeError:  # arguments that are not JSON values, or an unhashable callable: check every time
        return resolve_grader(path, args, where, part=part)
    if wants_solutions is not None:
        return GraderSpec(path, fn, dict(args), part, wants_solutions)
    spec = resolve_grader(path, args, where, part=part)
    if len(_CHECKED) >= _CHECKED_SIZE:
        _CHECKED.clear()
    _CHECKED[key] = spec.wants_solutions
    return spec


def build_expectations(path: Path, data: dict[str, Any], tools: tuple[str, ...], outcomes: tuple[str, ...],
                       search: Path) -> Expectations:
    """Resolve the grading keys of one task.json (already checked for unknown top-level keys)."""
    where = str(path)
    graders = [_built_in("graders.outcome:allowed_outcomes", {"allowed": list(outcomes)}, where,
                              part="outcome")]
    expect_state = data.get("expected_final_state", True)
    if not isinstance(expect_state, bool):
        raise _err(path, f"expected_final_state must be true or false but got {expect_state!r}.")
    if expect_state:
        graders.append(_built_in("graders.state:expected_final_state", {}, where, part="state"))
    steps = _steps(path, data.get("required_steps", []), tools)
    if steps:
        graders.append(_built_in("graders.steps:required_steps", {"steps": list(steps)}, where, part="steps"))
    patterns = _patterns(path, data.get("forbidden_changes", ["paid_instalments", "currency", "outside_target"]))
    if patterns:
        graders.append(_built_in("graders.forbidden:forbidden_changes", {"patterns": patterns}, where,
                                      part="forbidden"))
    for key, grader, part in (("unauthorised_actions", "graders.authority:unauthorised_actions", "authority"),
                              ("money_invariants", "graders.money:money_invariants", "money")):
        setting = data.get(key, True)
        if setting is False:
            continue
        if setting is True:
            setting = {}
        if not isinstance(setting, dict):
            raise _err(path, f"{key} must be true, false or an object of the grader's args but got {setting!r}.")
        graders.append(_built_in(grader, setting, where, part=part))
    comms = _communications(path, data.get("communications", True))
    if comms is not None:
        graders.append(_built_in("graders.comms:communications", comms, where, part="comms"))
    bounds = _requires(path, data.get("requires", {}))
    if bounds:
        graders.append(_built_in("graders.requires:requires", {"bounds": bounds}, where, part="requires"))
    hooks = data.get("hooks", {})
    _closed(path, "hooks", hooks, _HOOK_KEYS)
    own = _custom(path, hooks.get("pre_grade", []), "hooks.pre_grade", search)
    own += _custom(path, data.get("graders", []), "graders", search)
    graders += own
    post_run = hooks.get("post_run", [])
    if not isinstance(post_run, list):
        raise _err(path, f"hooks.post_run must be a list of 'module:function' but got {post_run!r}.")
    post = tuple(resolve_callable(p, f"{path}: hooks.post_run[{i}]", search) for i, p in enumerate(post_run))
    if not (expect_state or steps or bounds or own):
        raise _err(path, "no expectations: set expected_final_state, required_steps, requires or a grader; "
                         "a scenario that expects nothing would pass any agent.")
    weights = data.get("weights", {})
    _closed(path, "weights", weights, PARTS)
    for part, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
            raise _err(path, f"weights.{part} must be a number >= 0 but got {w!r}.")
    scored = {g.part for g in graders} - set(GATES)
    if scored and not any(weights.get(p, 1.0) for p in scored):
        raise _err(path, f"weights give every scored part ({', '.join(sorted(scored))}) weight 0, so total would "
                         "mean nothing; give at least one a weight above 0.")
    return Expectations(tuple(graders), post, {k: float(v) for k, v in weights.items()}, steps)
