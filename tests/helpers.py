"""Helpers the tests share: the command line as a user runs it, private copies of the suite, the docs' examples."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent


def simworld(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -m simworld ARGS`` and capture its output (a hung command fails the test, not CI)."""
    return subprocess.run([sys.executable, "-m", "simworld", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def copy_suite(root: Path, *ids: str, **task_changes: Any) -> Path:
    """Copy scenarios ``ids`` (and the snapshots) under ``root``; return the suite directory.

    ``task_changes`` are applied to every copied task.json: a value replaces the key, None removes it.
    """
    for sid in ids:
        shutil.copytree(ROOT / "scenarios" / sid, root / "scenarios" / sid)
        if task_changes:
            edit_task(root / "scenarios" / sid / "task.json", **task_changes)
    if not (root / "snapshots").exists():
        shutil.copytree(ROOT / "snapshots", root / "snapshots")
    return root / "scenarios"


def edit_task(task: Path, **changes: Any) -> None:
    """Change keys of a task.json: a value replaces the key, None removes it."""
    data = orjson.loads(task.read_bytes())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    task.write_bytes(orjson.dumps(data))


def docs_text() -> str:
    """README.md and every page under docs/, one after the other (where the examples and promises now live)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n\n".join(p.read_text(encoding="utf-8") for p in pages)


def readme_example(first_line: str) -> str:
    """The code of the python example, in README.md or a page under docs/, whose first line is ``first_line``
    (``# gym_example.py``, say)."""
    code = re.search(r"```python\n(" + re.escape(first_line) + r".*?)```", docs_text(), flags=re.S)
    assert code, f"neither README.md nor docs/ has a python example starting {first_line!r}"
    return code.group(1)
