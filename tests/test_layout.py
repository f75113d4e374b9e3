"""The layout: one folder per stage of the data flow, imports pointing only down it, and no import circles.

Every import counts: at the top of a module, inside a function (a lazy import is still
a dependency) and under ``TYPE_CHECKING``. A new upward import or a new circle fails
here, naming the files and the modules involved.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import simworld

ROOT = Path(__file__).resolve().parent.parent

#: The stages, in data-flow order: each may import the ones before it, never one after.
STAGES = (
    "simworld.errors",
    "simworld._world",
    "simworld._grading",
    "graders",
    "simworld._scenario",
    "simworld._episode",
    "simworld._agents",
    "simworld._running",
    "simworld._families",
    "simworld._edges",
    "simworld",  # the public face (__init__, __main__): may import every stage
)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package and the built-in graders under ``root``, by dotted name."""
    found = {}
    for top in ("simworld", "graders"):
        for path in (root / top).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (anywhere in its body)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(filter(None, (_owner(a.name, known) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                for a in node.names:
                    target = _owner(f"{base}.{a.name}", known) or _owner(base, known)
                    if target:
                        targets.add(target)
        targets.discard(name)
        graph[name] = targets
    return graph


def stage(module: str) -> int:
    """The index in STAGES of the stage that holds ``module`` (the longest matching prefix)."""
    best = max((s for s in STAGES if module == s or module.startswith(s + ".")), key=len, default=None)
    if best is None:
        raise AssertionError(f"{module} is in no stage; put it in a stage folder or add its stage to STAGES")
    return STAGES.index(best)


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that points up the data flow, as 'importer -> imported'."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if stage(b) > stage(a))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> Iterator[None]:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                yield from visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            for _ in visit(v):
                pass
    return sorted(found)


class TestLayout:
    def test_every_module_is_in_a_stage(self) -> None:
        """Each module of simworld/ and graders/ sits in one of the stages."""
        for name in modules(ROOT):
            stage(name)

    def test_imports_point_down_the_data_flow(self) -> None:
        """No module imports one of a later stage."""
        assert upward(imports(ROOT)) == []

    def test_no_import_circles(self) -> None:
        """No two modules import each other, directly or through others."""
        assert circles(imports(ROOT)) == []

    def test_each_stage_says_what_it_owns_and_may_import(self) -> None:
        """Each stage folder's __init__ has a docstring naming what it owns and what it may import."""
        for name in STAGES[1:-1]:
            if not name.startswith("simworld."):
                continue
            init = ROOT / Path(*name.split(".")) / "__init__.py"
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
            assert doc and "May import" in doc, f"{init.relative_to(ROOT)}: say what it owns and may import"

    def test_the_top_of_the_package_is_the_public_face(self) -> None:
        """simworld/ holds the public face, the errors, the published schemas and the stage folders (private by
        their leading underscore); nothing else."""
        top = {p.name for p in (ROOT / "simworld").iterdir() if p.name != "__pycache__"}
        stages = {s.split(".")[1] for s in STAGES if s.startswith("simworld._")}
        assert top == {"__init__.py", "__main__.py", "errors.py", "schemas", *stages}


class TestTheContractCanFail:
    """The checks above, on a small tree made to break them."""

    @staticmethod
    def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
        for rel, text in {"simworld/__init__.py": "", "graders/__init__.py": "", **files}.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return tmp_path

    def test_an_upward_import_inside_a_function_is_found(self, tmp_path: Path) -> None:
        root = self._tree(tmp_path, {
            "simworld/_world/__init__.py": "", "simworld/_edges/__init__.py": "",
            "simworld/_world/money.py": "def f():\n    from simworld._edges.cli import main\n",
            "simworld/_edges/cli.py": "from simworld._world import money\n\ndef main(): ...\n",
        })
        assert upward(imports(root)) == ["simworld._world.money -> simworld._edges.cli"]
        assert circles(imports(root)) == [["simworld._edges.cli", "simworld._world.money"]]

    def test_a_circle_within_a_stage_and_a_relative_import_are_found(self, tmp_path: Path) -> None:
        root = self._tree(tmp_path, {
            "simworld/_episode/__init__.py": "",
            "simworld/_episode/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
            "simworld/_episode/b.py": "from simworld._episode import a\n\nclass B: ...\n",
        })
        assert upward(imports(root)) == []
        assert circles(imports(root)) == [["simworld._episode.a", "simworld._episode.b"]]

    def test_a_module_outside_every_stage_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(AssertionError, match="elsewhere.thing is in no stage"):
            stage("elsewhere.thing")


class TestPublicModules:
    def test_each_public_module_path_imports_and_serves_its_names(self) -> None:
        """Each path of simworld.MODULES imports in a fresh interpreter (as a user's code would) and is its house
        module itself, or finds each name of its house modules."""
        code = textwrap.dedent("""
            import importlib, simworld
            bad = []
            for path, homes in sorted(simworld.MODULES.items()):
                module = importlib.import_module(path)
                mods = [importlib.import_module(h) for h in homes]
                if len(mods) == 1 and module is not mods[0]:
                    bad.append(path + " is not " + homes[0])
                bad += [path + "." + n for m in mods for n in getattr(m, "__all__", ()) if getattr(module, n) is None]
            print(len(simworld.MODULES), bad)
        """)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split(maxsplit=1) == [str(len(simworld.MODULES)), "[]\n"]

    def test_an_unknown_name_of_a_served_path_is_an_attribute_error(self) -> None:
        module = importlib.import_module("simworld.runner")
        assert module.run_suite is importlib.import_module("simworld._running.runner").run_suite
        assert module.graded_line is importlib.import_module("simworld._episode.judge").graded_line
        with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
            _ = module.nothing_here

    def test_every_house_module_is_served_or_private(self) -> None:
        """Outside the stage folders (private by their underscore), only the face and the errors are modules."""
        public = [m for m in modules(ROOT) if m.startswith("simworld") and not any(
            part.startswith("_") for part in m.split(".")[1:])]
        assert sorted(public) == ["simworld", "simworld.errors"]
