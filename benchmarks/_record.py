"""What the benchmarks write beside their figures: the command that made them and the commits they compared."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commit_of(path: Path) -> str | None:
    """The commit checked out at ``path``, or None when it is not a git work tree."""
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 and (path / ".git").exists() else None


def recorded_command(script: str, argv: list[str]) -> str:
    """The command line as a results file records it: a path inside this repository relative to it, any other path
    by its role (``BASELINE_CHECKOUT``, ``WORK_DIR``, ``OUT_FILE``), so the file names nothing of one machine."""
    roles = {"--baseline": "BASELINE_CHECKOUT", "--work": "WORK_DIR", "--out": "OUT_FILE"}
    out: list[str] = []
    for i, arg in enumerate(argv):
        flag = argv[i - 1] if i else ""
        if os.path.isabs(arg) or (flag in roles and os.path.exists(arg)):
            path = Path(arg).resolve()
            arg = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else roles.get(flag, "PATH")
        out.append(arg)
    return " ".join(["python", script, *out])
