"""Scenarios: a directory with task.json, prompt.md and one or more solutions.

task.json is a closed schema: an unknown key, category, outcome class, tool name
or perturbation is a load-time error that names the file, the key and the
allowed values. prompt.md wins over a ``prompt`` key. Solutions are
``solution*.jsonl`` files, one ``{"tool": NAME, "args": {...}}`` per line; several
files are several valid answers. They are ordered by name without the extension, so
a plain ``solution.jsonl`` comes before its ``solution-*.jsonl`` variants and stays
the reference (first) solution as variants are added; messages name a solution by
its file. Arguments may use ``"{var}"`` templates (the seed's variables) and
``{"$from": [STEP, "dotted.path"]}`` (a value from the result of an earlier step of
the same solution), so one solution plays every seed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson

from simworld._scenario.expectations import GRADING_KEYS, Expectations, build_expectations
from simworld._scenario.schemacheck import first_error, load_schema, read_json_file
from simworld._world.files import MAX_SCENARIO_FILE_BYTES, as_path, read_bounded
from simworld._world.held import Held
from simworld._world.perturb import (
    PARAM_KINDS,
    PERTURB_KEYS,
    Draws,
    Perturbed,
    RandomDraws,
    WorldDraws,
    perturb,
    world_id,
)
from simworld._world.snapshot import Snapshot, SnapshotLoader
from simworld._world.splits import HOLDOUT_BASE, SPLITS, effective_seed
from simworld._world.templates import check_template, from_reference, render, resolve_args
from simworld._world.tools import OUTCOMES, TOOLS, Kind
from simworld._world.vocab import CATEGORIES
from simworld.errors import ScenarioError, SimworldError

__all__ = ["CATEGORIES", "TASK_KEYS", "Scenario", "Step", "bundled_root", "check_split", "load_scenario",
           "load_suite"]

TASK_KEYS = ("id", "category", "description", "split", "snapshot", "target", "perturb", "params", "budget", "tools",
             "allowed_outcomes", "prompt", "recovery", *GRADING_KEYS)
_TARGET_KEYS = ("customer", "policy", "plan", "fee")
#: The perturbed starts of the last few (scenario, seed)s: the agent's episode and every solution replay of a
#: seed start from the same one (a Perturbed is immutable: a State, a clock and variables nobody writes to). Sixteen
#: by default, enough for a run's episodes in flight (a run sets its own bound; a start dropped is drawn again, the
#: same).
_INSTANCES: Held[tuple[Scenario, Perturbed]] = Held(16)


def hold_starts(n: int) -> int:
    """Hold at most ``n`` (at least one) perturbed starts from now on, the oldest let go first; the bound it replaces.

    A run that knows how many episodes it has in flight holds that many (see
    :func:`simworld._running.runner.run_suite`): the starts of episodes already graded are then let go at once,
    while their records are still in the processor's caches, instead of a dozen episodes later.
    """
    return _INSTANCES.bound(n)
#: Size limits (documented in docs/scenarios.md): the request (prompt.md) and a solution or script file.
MAX_PROMPT_BYTES = 64 * 1024
MAX_SCRIPT_BYTES = 1024 * 1024
_BUDGET_KEYS = ("max_steps", "timeout_s")
_RECOVERY_KEYS = ("crash_at_call", "after_side_effect")


def bundled_root() -> Path:
    """The directory holding the bundled ``scenarios/`` and ``snapshots/``.

    In an installed wheel they are shipped inside the package; in a source checkout
    they sit at the repository's top level.
    """
    here = Path(__file__).resolve().parents[1]  # the simworld package
    installed = here / "_bundled"
    if (installed / "scenarios").is_dir():
        return installed
    return here.parent


@attrs.frozen
class Step:
    """One action of a solution or a script: a tool name and its (templated) arguments."""

    tool: str
    args: dict[str, Any]


@attrs.frozen
class Recovery:
    """Where the runner lets the agent die: at its ``crash_at_call``-th call (counted from 1 over the episode),
    before the call's effect lands or, with ``after_side_effect``, after it lands but before the log records it."""

    crash_at_call: int
    after_side_effect: bool


@attrs.frozen(eq=False)
class Scenario:
    """A loaded, validated scenario."""

    id: str
    path: Path
    category: str
    description: str
    snapshot: Snapshot
    target: dict[str, str]
    perturb: dict[str, Any]
    params: dict[str, Any]
    max_steps: int
    timeout_s: float
    tools: tuple[str, ...]
    allowed_outcomes: tuple[str, ...]
    prompt: str
    solutions: tuple[tuple[Step, ...], ...]
    solution_files: tuple[str, ...]  # the file name of each solution, in the same order
    expectations: Expectations
    recovery: Recovery | None = None
    #: ``holdout`` for a holdout instance (task.json ``"split": "holdout"``, as ``families generate --split holdout``
    #: writes it): it runs only in the holdout split, at holdout seeds (see :meth:`run_seed`), else ``dev``.
    split: str = "dev"
    #: Pinned world parameters (:meth:`at_world`): when set, every seed gives this one world.
    world: Mapping[str, Any] | None = None

    def instance(self, seed: int) -> Perturbed:
        """The seed's perturbed initial state, clock, template variables and world parameters.

        A scenario pinned with :meth:`at_world` gives its world whatever the seed.
        """
        key = (id(self), seed)
        mine = self._holds
        held = _INSTANCES.get(key, mine)
        if held is not None:
            return held[1]
        if self.world is not None:
            made = self.perturbed(WorldDraws(self.world))
        else:
            made = self.perturbed(RandomDraws(random.Random(f"{self.id}/{seed}")))
        return _INSTANCES.keep(key, (self, made), mine)[1]

    def _holds(self, held: tuple[Scenario, Perturbed]) -> bool:
        """Whether a start held under this scenario's id is this scenario's (an id is reused once one is freed)."""
        return held[0] is self

    def perturbed(self, draws: Draws) -> Perturbed:
        """The world whose every choice comes from ``draws`` (a seed's generator, parameters, hypothesis)."""
        return perturb(self.snapshot.state(), self.snapshot.clock, self.snapshot.policy, self.target, self.perturb,
                       self.params, draws)

    def at_world(self, world: Mapping[str, Any]) -> Scenario:
        """This scenario pinned to explicit world parameters (see :mod:`simworld._world.perturb`).

        Raises:
            ScenarioError: naming the parameter, when one is missing, unknown or not a
                value this scenario allows.
        """
        try:
            copy = orjson.loads(orjson.dumps(world))  # a private copy, plain JSON values
        except TypeError as exc:
            raise ScenarioError(f"Expected the world as JSON values but got {world!r} ({exc}).") from None
        pinned = attrs.evolve(self, world=copy)
        return attrs.evolve(self, world=pinned.instance(0).world)  # as drawn: the parameters in draw order

    def world_seed(self, seed: int | None = None) -> int:
        """The seed a run of this pinned scenario reports: ``seed`` when that dev seed gives exactly this world,
        else a stable number derived from the parameters (:func:`simworld._world.perturb.world_id`)."""
        if self.world is None:
            raise ValueError(f"Scenario {self.id!r} is not pinned to a world; call at_world() first.")
        if seed is not None and 0 <= seed < HOLDOUT_BASE and \
                attrs.evolve(self, world=None).instance(seed).world == self.world:
            return seed
        return world_id(self.id, self.world)

    def run_seed(self, seed: int, split: str = "dev") -> int:
        """The seed this scenario runs at for seed ``seed`` of ``split``, as ``simworld run --split`` reads it.

        Raises:
            ScenarioError: what :func:`simworld._world.splits.check_seed` refuses, and a holdout instance
                outside the holdout split (see :func:`check_split`).
        """
        check_split([self], split)
        return effective_seed(self.id, seed, split)

    def request(self, variables: dict[str, Any]) -> str:
        """The customer's request rendered for a seed's variables."""
        return render(self.prompt, variables, os.path.join(self.path, "prompt.md"))  # (a pathlib join costs more)


def _fail(path: Path, msg: str) -> ScenarioError:
    return ScenarioError(f"{path}: {msg}")


def _closed(path: Path, where: str, data: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise _fail(path, f"unknown key(s) {unknown!r} in {where}; allowed: {', '.join(allowed)}.")


def read_steps(path: Path, allowed_tools: tuple[str, ...] | None = None) -> tuple[Step, ...]:
    """Read a JSONL file of ``{"tool": NAME, "args": {...}}`` lines, naming the line of any problem."""
    steps: list[Step] = []
    try:
        lines = read_bounded(path, MAX_SCRIPT_BYTES, ScenarioError, "a solution or script file").splitlines()
    except OSError:
        raise ScenarioError(f"{path}: cannot read this file; check the path.") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ScenarioError(f"{path}:{n}: not valid JSON ({exc}).") from None
        if not isinstance(data, dict) or set(data) - {"tool", "args"} or not isinstance(data.get("tool"), str):
            raise ScenarioError(f'{path}:{n}: expected {{"tool": NAME, "args": {{...}}}} but got {line.decode()!r}.')
        args = data.get("args", {})
        if not isinstance(args, dict):
            raise ScenarioError(f"{path}:{n}: args must be an object but got {args!r}.")
        stack: list[Any] = [args]
        while stack:  # every template and $from in the arguments is well formed, checked now rather than mid-episode
            value = stack.pop()
            if isinstance(value, str) and "{" in value:
                check_template(value, f"{path}:{n}")
            elif isinstance(value, dict) and set(value) == {"$from"}:
                from_reference(value["$from"], f"{path}:{n} (step {len(steps)})", before=len(steps))
            elif isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
        names = allowed_tools if allowed_tools is not None else tuple(TOOLS)
        if data["tool"] not in names:
            raise ScenarioError(f"{path}:{n}: unknown tool {data['tool']!r}; allowed: {', '.join(names)}.")
        steps.append(Step(data["tool"], args))
    return tuple(steps)


def load_scenario(directory: str | os.PathLike[str], loader: SnapshotLoader | None = None,
                  snapshot: str | None = None) -> Scenario:
    """Load and validate the scenario in ``directory``; any problem is a ScenarioError naming the file.

    task.json is checked against the published schema (``simworld/schemas/task.schema.json``)
    and by the semantic checks a schema cannot express (ids that exist in the snapshot,
    ``requires`` bounds with min <= max, weights not all 0, a step DAG without cycles).
    Whatever is wrong, the error is one line naming the file and the key: never a traceback.

    ``snapshot`` runs the scenario on another world (e.g. ``large``) than its task.json names.
    ``directory`` is a str or an os.PathLike.
    """
    directory = as_path(directory, "directory")
    task_path = directory / "task.json"
    data, problem = _schema_problem(task_path)
    if problem:
        raise _fail(task_path, problem)
    try:
        return _load_scenario(directory, loader, snapshot, data)
    except SimworldError:
        raise
    except Exception as exc:  # never a traceback: a shape no check foresaw is still one line naming the file
        raise _fail(task_path, f"cannot load ({type(exc).__name__}: {exc})") from None


def _schema_problem(task_path: Path) -> tuple[Any, str | None]:
    """task.json's JSON (:data:`_UNREAD` when it cannot be read or parsed: the loader names why), and the first way
    it breaks the published schema, with where to read the format (None if it fits)."""
    try:
        data = orjson.loads(read_bounded(task_path, MAX_SCENARIO_FILE_BYTES, ScenarioError, "task.json"))
    except (OSError, ScenarioError, orjson.JSONDecodeError):  # the loader names each of these
        return _UNREAD, None
    problem = first_error(data, load_schema("task.schema.json"), root="task.json")
    return data, (f"{problem}; the format is simworld/schemas/task.schema.json (docs/scenarios.md: Writing a scenario)"
                  if problem else None)


#: task.json not read yet (or not readable: read again, so that the loader's own message names the problem).
_UNREAD = object()


def _load_scenario(directory: Path, loader: SnapshotLoader | None, snapshot: str | None,
                   data: Any = _UNREAD) -> Scenario:
    loader = loader or SnapshotLoader()
    task_path = directory / "task.json"
    if data is _UNREAD:
        data = read_json_file(task_path, ScenarioError, "a scenario directory needs a task.json")
    if not isinstance(data, dict):
        raise _fail(task_path, "expected a JSON object at the top level.")
    _closed(task_path, "task.json", data, TASK_KEYS)
    for key in ("id", "category", "snapshot", "target", "allowed_outcomes"):
        if key not in data:
            raise _fail(task_path, f"missing required key {key!r}.")
    sid = data["id"]
    if not isinstance(sid, str) or sid != directory.name:
        raise _fail(task_path, f"id {sid!r} must be a string equal to the directory name {directory.name!r}.")
    if data.get("split", "dev") not in SPLITS:
        raise _fail(task_path, f"split {data['split']!r} is unknown; allowed: {', '.join(SPLITS)}.")
    if data["category"] not in CATEGORIES:
        raise _fail(task_path, f"category {data['category']!r} is unknown; allowed: {', '.join(CATEGORIES)}.")
    outcomes = data["allowed_outcomes"]
    if not isinstance(outcomes, list) or not outcomes:
        raise _fail(task_path, "allowed_outcomes must be a non-empty list.")
    for o in outcomes:
        if o not in OUTCOMES:
            raise _fail(task_path, f"allowed_outcomes has {o!r}; allowed: {', '.join(OUTCOMES)}.")
    tools = data.get("tools", list(TOOLS))
    for t in tools:
        if t not in TOOLS:
            raise _fail(task_path, f"tools has unknown tool {t!r}; allowed: {', '.join(TOOLS)}.")
    target = data["target"]
    if not isinstance(target, dict):
        raise _fail(task_path, "target must be an object naming the customer, policy and plan.")
    _closed(task_path, "target", target, _TARGET_KEYS)
    budget = data.get("budget", {})
    _closed(task_path, "budget", budget, _BUDGET_KEYS)
    spec = data.get("perturb", {})
    _closed(task_path, "perturb", spec, PERTURB_KEYS)
    params = data.get("params", {})
    for name, p in params.items():
        if not isinstance(p, dict) or len(p) != 1 or next(iter(p)) not in PARAM_KINDS:
            raise _fail(task_path, f"params.{name} must be one of {{kind: value}} with kind in "
                                   f"{', '.join(PARAM_KINDS)}; got {p!r}.")

    snap_ref = snapshot or data["snapshot"]
    snap_path = directory.parent.parent / "snapshots" / f"{snap_ref}.json"
    if not snap_path.exists():
        snap_path = bundled_root() / "snapshots" / f"{snap_ref}.json"
    world = loader.load(snap_path)
    for key in ("customer", "policy", "plan"):
        if key not in target:
            raise _fail(task_path, f"target lacks {key!r}; name the customer, policy and plan the request is about.")
    for key, table in (("customer", "customers"), ("policy", "policies"), ("plan", "plans"), ("fee", "fees")):
        if key in target and world.base.tables[table].get(target[key]) is None:
            raise _fail(task_path, f"target.{key}={target[key]!r} is not in snapshot {snap_ref!r}.")
    for cur in spec.get("currencies", []):
        if cur not in world.policy.rates:
            known = ", ".join(sorted(world.policy.rates))
            raise _fail(task_path, f"perturb.currencies has {cur!r}; known: {known}.")

    prompt_path = directory / "prompt.md"
    if prompt_path.exists():
        try:
            prompt = read_bounded(prompt_path, MAX_PROMPT_BYTES, ScenarioError,
                                  "a request (prompt.md)").decode("utf-8").strip()
        except OSError as exc:
            raise _fail(prompt_path, f"cannot read this file ({exc.strerror or exc}); check its permissions.") \
                from None
        except UnicodeDecodeError as exc:
            raise _fail(prompt_path, f"not UTF-8 text (byte {exc.start}); save the request as UTF-8.") from None
    elif isinstance(data.get("prompt"), str):
        prompt = data["prompt"]
    else:
        raise _fail(task_path, "no request: write prompt.md next to task.json (or a 'prompt' key).")

    # By stem: on whole names '-' < '.' would put every "solution-x.jsonl" before "solution.jsonl".
    solution_files = sorted(directory.glob("solution*.jsonl"), key=lambda f: f.name.removesuffix(".jsonl"))
    if not solution_files:
        raise _fail(directory, "no solution*.jsonl; every scenario carries at least one reference solution.")
    solutions = []
    for f in solution_files:
        steps = read_steps(f, tuple(tools))
        if not steps or TOOLS[steps[-1].tool].kind is not Kind.TERMINAL:
            raise ScenarioError(f"{f}: a solution must end with a terminal tool (finish, escalate, "
                                "request_information or decline).")
        solutions.append(steps)

    recovery = None
    if "recovery" in data:
        rec = data["recovery"]
        _closed(task_path, "recovery", rec if isinstance(rec, dict) else {}, _RECOVERY_KEYS)
        n, after = rec.get("crash_at_call") if isinstance(rec, dict) else None, rec.get("after_side_effect", False)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1 or not isinstance(after, bool):
            raise _fail(task_path, f"recovery must be {{\"crash_at_call\": N >= 1, \"after_side_effect\": "
                                   f"true|false}} but got {rec!r}.")
        recovery = Recovery(n, after)
    expectations = build_expectations(task_path, data, tuple(tools), tuple(outcomes), directory.parent.parent)
    scenario = Scenario(
        id=sid, path=directory, category=data["category"], description=data.get("description", ""),
        split=data.get("split", "dev"),
        snapshot=world, target=target, perturb=spec, params=params,
        max_steps=int(budget.get("max_steps", 30)), timeout_s=float(budget.get("timeout_s", 60.0)),
        tools=tuple(tools), allowed_outcomes=tuple(outcomes), prompt=prompt, solutions=tuple(solutions),
        solution_files=tuple(f.name for f in solution_files), expectations=expectations, recovery=recovery,
    )
    # Fail at load, not at the first episode, on a placeholder no seed can fill.
    variables = scenario.instance(0).vars
    scenario.request(variables)
    for step in expectations.required_steps:
        resolve_args(step.get("args", {}), variables, [], f"{task_path}: required step {step['id']!r}")
    return scenario


def load_suite(suite: str | os.PathLike[str] | None = None, ids: list[str] | None = None,
               snapshot: str | None = None) -> list[Scenario]:
    """Load every scenario under ``suite`` (the bundled suite by default, sorted by id), or only ``ids``.

    ``suite`` is a str or an os.PathLike. ``ids`` keep the order given; an id named twice loads once.
    """
    root = bundled_root() / "scenarios" if suite is None else as_path(suite, "suite")
    if not root.is_dir():
        raise ScenarioError(f"Suite directory {str(root)!r} not found; pass --suite DIR with one folder per scenario.")
    available = sorted(p.name for p in root.iterdir() if (p / "task.json").exists())
    wanted = list(dict.fromkeys(ids)) if ids else available
    if not wanted:
        raise ScenarioError(f"Suite directory {str(root)!r} holds no scenario (no folder with a task.json); "
                            "pass --suite DIR with one folder per scenario.")
    missing = [i for i in wanted if i not in available]
    if missing:
        raise ScenarioError(f"Unknown scenario(s) {missing!r} in {root}; available: {', '.join(available)}.")
    loader = SnapshotLoader()
    return [load_scenario(root / i, loader, snapshot) for i in wanted]


def check_split(scenarios: Iterable[Scenario], split: str) -> None:
    """Refuse holdout instances outside the holdout split: one line naming them and the fix.

    A holdout instance (task.json ``"split": "holdout"``) is a reserved point of a family's parameter space, so
    a dev command given one would run, check or serve holdout: only ``--split holdout`` (``split="holdout"``
    from Python) reaches it, where it runs at its reserved holdout seeds like every scenario of that split.
    """
    held = [s.id for s in scenarios if s.split == "holdout"]
    if not held or split == "holdout":
        return
    fix = "--split holdout (split='holdout' from Python)"
    if len(held) == 1:
        raise ScenarioError(f"scenario {held[0]!r} is a holdout instance (task.json \"split\": \"holdout\") and runs "
                            f"only in the holdout split, not {split!r}; ask for it with {fix}.")
    shown = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
    raise ScenarioError(f"{len(held)} scenarios are holdout instances ({shown}; task.json \"split\": \"holdout\") "
                        f"and run only in the holdout split, not {split!r}; run them with {fix}, or leave them out "
                        "(--scenario names the ones to run).")
