"""Static checks run with the settings in pyproject.toml, so CI fails on a lint or type error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class TestStatic:
    def test_ruff(self) -> None:
        """ruff reports nothing on the package, graders, tests and benchmarks."""
        done = subprocess.run([sys.executable, "-m", "ruff", "check", "simworld", "graders", "tests", "benchmarks"],
                              capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stdout + done.stderr

    def test_mypy(self) -> None:
        """mypy reports nothing on the package and graders."""
        done = subprocess.run([sys.executable, "-m", "mypy", "simworld", "graders"], capture_output=True, text=True,
                              cwd=ROOT)
        assert done.returncode == 0, done.stdout + done.stderr
