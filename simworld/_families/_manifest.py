"""Loading a task family: ``family.json`` (a closed schema) and ``phrasings.md``.

A family directory::

    families/split-into-n/
    ├── family.json    intents and their parameter ranges, fixtures, world space, phrasings, holdout share
    └── phrasings.md   one "## STYLE" section per phrasing: the request, with {var} filled per seed
                       and [[name]] filled from the instance's parameters at generation

Any problem is a FamilyError naming the file, the key and what was expected.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from simworld._families._intents import INTENTS, Intent
from simworld._scenario.schemacheck import first_error, load_schema, read_json_file
from simworld._world.files import MAX_SCENARIO_FILE_BYTES, read_bounded
from simworld._world.snapshot import Snapshot, SnapshotLoader
from simworld.errors import FamilyError

__all__ = ["STYLES", "Family", "families_root", "load_families", "load_family"]

#: The phrasing styles a family may offer.
STYLES = ("plain", "chatty", "terse", "irrelevant", "typo", "injected")
_SECTION = re.compile(r"^## (\w+)\s*$", re.M)
_FIELD = re.compile(r"\[\[(\w+)\]\]")


def families_root() -> Path:
    """The bundled ``families/`` directory: inside an installed wheel, or at a source checkout's top level."""
    from simworld._scenario.scenario import bundled_root

    return bundled_root() / "families"


@attrs.frozen(eq=False)
class Family:
    """A loaded, validated task family."""

    name: str
    path: Path
    category: str
    description: str
    snapshot: Snapshot
    snapshot_name: str
    intents: tuple[tuple[Intent, dict[str, Any]], ...]  # each intent with its parameter ranges
    fixtures: tuple[dict[str, str], ...]
    world: dict[str, Any]
    phrasings: dict[str, str]
    holdout_share: float
    recovery: tuple[bool, ...] = ()
    budget: dict[str, Any] = attrs.field(factory=dict)


def load_family(directory: Path, loader: SnapshotLoader | None = None) -> Family:
    """Load and check the family in ``directory``.

    Raises:
        FamilyError: naming the file and key of the first problem.
    """
    path = directory / "family.json"
    data = read_json_file(path, FamilyError, "a family directory needs a family.json")
    problem = first_error(data, load_schema("family.schema.json"), root="family.json")
    if problem:
        raise FamilyError(f"{path}: {problem}; the format is simworld/schemas/family.schema.json "
                          "(docs/families.md: Writing a family).")
    if data["family"] != directory.name:
        raise FamilyError(f"{path}: family {data['family']!r} must equal the directory name {directory.name!r}.")
    intents = []
    for n, spec in enumerate(data["intents"]):
        intent = INTENTS[spec["intent"]]
        params = spec.get("params", {})
        missing = [p for p in intent.params if p not in params]
        unknown = [p for p in params if p not in intent.params]
        if missing or unknown:
            raise FamilyError(f"{path}: intents[{n}] ({intent.name}) params: expected exactly "
                              f"{list(intent.params)!r} but got {sorted(params)!r}.")
        for name, rng in params.items():
            if "int" in rng and rng["int"][0] > rng["int"][1]:
                raise FamilyError(f"{path}: intents[{n}].params.{name}: Cannot have lo={rng['int'][0]} > "
                                  f"hi={rng['int'][1]}.")
        intents.append((intent, params))
    loader = loader or SnapshotLoader()
    snap_path = directory.parent.parent / "snapshots" / f"{data['snapshot']}.json"
    if not snap_path.exists():
        from simworld._scenario.scenario import bundled_root

        snap_path = bundled_root() / "snapshots" / f"{data['snapshot']}.json"
    snapshot = loader.load(snap_path)
    tables = {"customer": "customers", "policy": "policies", "plan": "plans", "fee": "fees"}
    for n, fixture in enumerate(data["fixtures"]):
        for key, rid in fixture.items():
            if snapshot.base.tables[tables[key]].get(rid) is None:
                raise FamilyError(f"{path}: fixtures[{n}].{key}={rid!r} is not in snapshot {data['snapshot']!r}.")
        if any(i.name == "waive" for i, _ in intents) and "fee" not in fixture:
            raise FamilyError(f"{path}: fixtures[{n}] names no fee, but the family's waive intent needs one.")
    for cur in data["world"].get("currencies", []):
        if cur not in snapshot.policy.rates:
            known = ", ".join(sorted(snapshot.policy.rates))
            raise FamilyError(f"{path}: world.currencies has {cur!r}; known: {known}.")
    phrasings = _phrasings(directory / "phrasings.md", data["phrasings"])
    return Family(
        name=data["family"], path=directory, category=data["category"], description=data["description"],
        snapshot=snapshot, snapshot_name=data["snapshot"], intents=tuple(intents),
        fixtures=tuple(data["fixtures"]), world=data["world"], phrasings=phrasings,
        holdout_share=float(data.get("holdout_share", "0.2")),
        recovery=tuple(data["recovery"]["after_side_effect"]) if "recovery" in data else (),
        budget=data.get("budget", {}),
    )


def _phrasings(path: Path, styles: list[str]) -> dict[str, str]:
    try:
        text = read_bounded(path, MAX_SCENARIO_FILE_BYTES, FamilyError, "phrasings.md").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FamilyError(f"{path}: not UTF-8 text (byte {exc.start}); save the phrasings as UTF-8.") from None
    except OSError:
        raise FamilyError(f"{path}: not found; write one '## STYLE' section per phrasing the family lists.") from None
    parts = _SECTION.split(text)
    found = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    unknown = [s for s in found if s not in STYLES]
    if unknown:
        raise FamilyError(f"{path}: unknown phrasing section(s) {unknown!r}; allowed: {', '.join(STYLES)}.")
    missing = [s for s in styles if not found.get(s)]
    if missing:
        raise FamilyError(f"{path}: no '## {missing[0]}' section (or it is empty); family.json lists it.")
    return {s: found[s] for s in styles}


def fill(template: str, values: dict[str, str], where: str) -> str:
    """Fill a phrasing's ``[[name]]`` fields from an instance's parameter texts; an unknown one is a FamilyError."""
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise FamilyError(f"{where}: unknown field [[{m.group(1)}]]; known: {', '.join(sorted(values)) or 'none'}.")
        return values[m.group(1)]
    return _FIELD.sub(one, template)


def load_families(root: Path | None = None, names: list[str] | None = None) -> list[Family]:
    """Load every family under ``root`` (the bundled ones by default, sorted by name), or only ``names``."""
    root = root or families_root()
    if not root.is_dir():
        raise FamilyError(f"Families directory {str(root)!r} not found; pass --root DIR with one folder per family.")
    available = sorted(p.name for p in root.iterdir() if (p / "family.json").exists())
    wanted = available if not names or names == ["all"] else list(dict.fromkeys(names))
    missing = [n for n in wanted if n not in available]
    if missing:
        raise FamilyError(f"Unknown famil{'y' if len(missing) == 1 else 'ies'} {missing!r} in {root}; available: "
                          f"{', '.join(available)} (or 'all').")
    loader = SnapshotLoader()
    return [load_family(root / n, loader) for n in wanted]
