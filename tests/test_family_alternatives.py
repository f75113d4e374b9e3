"""A second reading of every family: what a careful agent might do, and whether the graders agree.

Each family's ``alternatives.json`` lists readings of its request (see ``families/ALTERNATIVES.md``): an
*accepted* one must pass the instance's graders, a *wrong* one must fail them (it names the rule it breaks).
Each is played as a scripted trajectory over generated instances of the family whose outcome, parameters and
phrasing fit its ``when``, and graded as ``simworld run`` grades. An accepted reading marked ``known_failing``
fails today because of the family's ground truth; its test is an expected failure (strict), so it flips the
day the ground truth is fixed.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from simworld._episode.environment import Environment
from simworld._episode.judge import graded_line
from simworld._episode.play import play
from simworld._episode.steps import steps_factory
from simworld._families import load_families
from simworld._families._generate import Instance, draw, write_instance
from simworld._scenario.scenario import Scenario, Step, load_scenario

ROOT = Path(__file__).resolve().parent.parent
#: Instances drawn per family (generation seed 11, as tests/test_families.py draws them), played at world seed 0.
COUNT, GEN_SEED, SEED = 6, 11, 0
#: The keys an alternative may have, and its verdicts.
KEYS = {"name", "reading", "verdict", "rule", "when", "actions", "known_failing"}
VERDICTS = ("accepted", "wrong")
WHEN = {"outcome", "params", "phrasings"}


def alternatives(family: str) -> list[dict[str, Any]]:
    """A family's alternatives, checked against the file's closed schema."""
    path = ROOT / "families" / family / "alternatives.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, list) and data, path
    for alt in data:
        assert set(alt) <= KEYS and {"name", "reading", "verdict", "actions"} <= set(alt), (path, alt)
        assert alt["verdict"] in VERDICTS, (path, alt["name"])
        assert ("rule" in alt) == (alt["verdict"] == "wrong"), (path, alt["name"], "a wrong reading names its rule")
        assert "known_failing" not in alt or alt["verdict"] == "accepted", (path, alt["name"])
        assert set(alt.get("when", {})) <= WHEN, (path, alt["name"])
    names = [a["name"] for a in data]
    assert len(names) == len(set(names)), path
    return data


def params(inst: Instance) -> dict[str, Any]:
    """The instance's parameters, every intent's in one mapping (their names do not collide)."""
    out: dict[str, Any] = {}
    for p in inst.params:
        out.update(p)
    return out


def fits(alt: dict[str, Any], inst: Instance) -> bool:
    """Whether the alternative's ``when`` holds for the instance (outcome, parameter values, phrasing)."""
    when = alt.get("when", {})
    if "outcome" in when and not set(inst.solved.outcomes) & set(when["outcome"]):
        return False
    if "phrasings" in when and inst.phrasing not in when["phrasings"]:
        return False
    values = params(inst)
    return all(values.get(k) in allowed for k, allowed in when.get("params", {}).items())


def _fill(value: Any, values: dict[str, Any]) -> Any:
    """``[[param]]`` placeholders filled with the instance's parameters (a whole-string one keeps the type)."""
    if isinstance(value, str):
        if value.startswith("[[") and value.endswith("]]") and value.count("[[") == 1:
            return values[value[2:-2]]
        for k, v in values.items():
            value = value.replace(f"[[{k}]]", str(v))
        return value
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def steps_of(alt: dict[str, Any], inst: Instance, scenario: Scenario) -> list[Step] | None:
    """The trajectory: ``"solution:LABEL"`` plays the instance's own solution of that label (None when it has
    none), a list is a template."""
    actions = alt["actions"]
    if isinstance(actions, str):
        kind, _, label = actions.partition(":")
        assert kind == "solution", actions
        name = f"solution-{label}.jsonl" if label else "solution.jsonl"
        if name not in scenario.solution_files:
            return None
        return list(scenario.solutions[scenario.solution_files.index(name)])
    return [Step(s["tool"], _fill(s.get("args", {}), params(inst))) for s in actions]


@cache
def drawn(family_name: str) -> tuple[Instance, ...]:
    """The instances drawn of a family (once per test session)."""
    family = next(f for f in load_families() if f.name == family_name)
    return tuple(draw(family, COUNT, GEN_SEED).instances)


def instances(family_name: str, phrasing: str | None) -> tuple[Instance, ...]:
    """The drawn instances of a family, re-phrased when an alternative is about one phrasing."""
    family = next(f for f in load_families() if f.name == family_name)
    if phrasing is None:
        return drawn(family_name)
    return tuple(attrs.evolve(i, phrasing=phrasing, id=f"{i.id}-{phrasing}") for i in drawn(family_name)
                 if phrasing in family.phrasings)


def cases() -> list[Any]:
    out = []
    for family in sorted(p.parent.name for p in (ROOT / "families").glob("*/family.json")):
        path = ROOT / "families" / family / "alternatives.json"
        if not path.exists():
            continue
        for alt in alternatives(family):
            marks = [pytest.mark.xfail(strict=True, reason=alt["known_failing"])] if "known_failing" in alt else []
            out.append(pytest.param(family, alt["name"], marks=marks, id=f"{family}:{alt['name']}"))
    return out


#: Instances written and loaded once per session (loading is what caches a scenario's solution end states).
_LOADED: dict[str, Scenario] = {}


def scenario_of(family: Any, inst: Instance, tmp: Path) -> Scenario:
    """The instance as a loaded scenario, written under ``tmp`` the first time it is asked for."""
    if inst.id not in _LOADED:
        write_instance(family, inst, GEN_SEED, tmp)
        _LOADED[inst.id] = load_scenario(tmp / inst.id)
    return _LOADED[inst.id]


def play_alternative(family_name: str, alt: dict[str, Any], tmp: Path) -> list[tuple[str, bool, str]]:
    """Play the alternative over every fitting instance; (instance id, passed, first failed check) per instance."""
    family = next(f for f in load_families() if f.name == family_name)
    phrasings = alt.get("when", {}).get("phrasings")
    pool = [i for p in (phrasings or [None]) for i in instances(family_name, p)]
    played = []
    for inst in pool:
        if not fits(alt, inst):
            continue
        scenario = scenario_of(family, inst, tmp)
        steps = steps_of(alt, inst, scenario)
        if steps is None:
            continue
        episode = play(Environment(scenario, SEED, agent_name=alt["name"]), steps_factory(steps, alt["name"]))
        line = graded_line(scenario, episode)
        failed = next((f"{c['name']}: {c['detail']}" for c in line["checks"] if not c["passed"]), "")
        played.append((inst.id, bool(line["passed"]), failed))
    return played


class TestFiles:
    def test_every_family_has_a_second_reading(self) -> None:
        """Every family has alternatives.json, with at least one accepted and one wrong reading."""
        for family in load_families():
            alts = alternatives(family.name)
            assert {a["verdict"] for a in alts} == set(VERDICTS), family.name

    def test_the_readme_table_is_the_files(self) -> None:
        """families/ALTERNATIVES.md lists exactly the alternatives the files hold, with their verdicts."""
        text = (ROOT / "families" / "ALTERNATIVES.md").read_text(encoding="utf-8")
        for family in load_families():
            for alt in alternatives(family.name):
                verdict = "accepted (known failing)" if "known_failing" in alt else alt["verdict"]
                assert f"| {family.name} | {alt['name']} | {verdict} |" in text, (family.name, alt["name"])


@pytest.mark.slow
@pytest.mark.parametrize(("family", "name"), cases())
def test_alternative(family: str, name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """An accepted reading passes the graders on every instance it fits; a wrong one fails on every one."""
    alt = next(a for a in alternatives(family) if a["name"] == name)
    played = play_alternative(family, alt, tmp_path_factory.getbasetemp() / "instances")
    assert played, f"{family}:{name} fits none of the {COUNT} drawn instances; widen its when or draw more"
    if alt["verdict"] == "accepted":
        assert all(ok for _, ok, _ in played), [p for p in played if not p[1]]
    else:
        assert not any(ok for _, ok, _ in played), [p for p in played if p[1]]


def dump(family: str) -> None:  # pragma: no cover - a helper for writing a family's file by hand
    """Print what every alternative of ``family`` does on each instance (python -c 'from ... import dump')."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for alt in alternatives(family):
            print(alt["name"], alt["verdict"], orjson.dumps(play_alternative(family, alt, Path(tmp))).decode())
