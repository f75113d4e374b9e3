"""The README's promises: its two set-up commands are what CI runs, and its example agent works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _bash_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", README, flags=re.S)]


class TestSetUp:
    def test_exactly_two_setup_commands(self) -> None:
        """The Set up section holds exactly two commands: the main job and the test suite."""
        section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
        blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
        assert [b.strip() for b in blocks] == [
            "python -m pip install . && simworld run --seed 42",
            "python -m pip install '.[test]' && python -m pytest",
        ]

    def test_ci_runs_the_readme_test_command(self) -> None:
        """.ci/run runs the README's test command verbatim."""
        ci = (ROOT / ".ci" / "run").read_text()
        assert _bash_blocks()[1] in ci


class TestExampleAgent:
    def test_example_agent_passes(self, tmp_path: Path) -> None:
        """The README's complete example agent passes the scenario it names, at several seeds."""
        code = re.search(r"```python\n(# my_agent\.py.*?)```", README, flags=re.S)
        assert code
        (tmp_path / "my_agent.py").write_text(code.group(1))
        for seed in ("0", "13"):
            done = subprocess.run([sys.executable, "-m", "simworld", "run", "--agent", "python:my_agent:SplitInThree",
                                   "--scenario", "split-balance-three-ways", "--seed", seed, "--out", "o"],
                                  capture_output=True, text=True, cwd=tmp_path)
            assert done.returncode == 0, done.stdout + done.stderr
            (line,) = (tmp_path / "o" / "results.jsonl").read_bytes().splitlines()
            assert orjson.loads(line)["passed"]

    def test_environment_example(self) -> None:
        """The README's make()/step()/grade() example runs as written."""
        code = re.search(r"```python\n(import simworld\n.*?)```", README, flags=re.S)
        assert code
        scope: dict[str, object] = {}
        exec(code.group(1), scope)  # noqa: S102 - the README's own example
        result = scope["result"]
        assert result["outcome"] == "decline" and result["passed"] is False  # type: ignore[index]
