"""The README's promises (its two set-up commands are what CI runs) and the docs' worked examples, run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
from helpers import docs_text

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: README.md and the pages under docs/: the worked examples live in the pages.
DOCS = docs_text()


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
        """The docs' complete example agent (my_agent.py) passes the scenario it names, at several seeds."""
        code = re.search(r"```python\n(# my_agent\.py.*?)```", DOCS, flags=re.S)
        assert code
        (tmp_path / "my_agent.py").write_text(code.group(1))
        for seed in ("0", "13"):
            done = subprocess.run([sys.executable, "-m", "simworld", "run", "--agent", "python:my_agent:SplitInThree",
                                   "--scenario", "split-balance-three-ways", "--seed", seed, "--out", f"o{seed}"],
                                  capture_output=True, text=True, cwd=tmp_path)
            assert done.returncode == 0, done.stdout + done.stderr
            (line,) = (tmp_path / f"o{seed}" / "results.jsonl").read_bytes().splitlines()
            assert orjson.loads(line)["passed"]

    def test_environment_example(self) -> None:
        """The docs' make()/step()/grade() example runs as written."""
        code = re.search(r"```python\n(import simworld\n.*?)```", DOCS, flags=re.S)
        assert code
        scope: dict[str, object] = {}
        exec(code.group(1), scope)  # noqa: S102 - the docs' own example
        result = scope["result"]
        assert result["outcome"] == "decline" and result["passed"] is False  # type: ignore[index]


class TestCustomGraderExample:
    def test_worked_example_catches_a_full_number(self, tmp_path: Path) -> None:
        """The docs' custom grader, wired as it says, fails a leaked card number and passes a masked one."""
        import shutil

        code = re.search(r"```python\n(# my_graders\.py.*?)```", DOCS, flags=re.S)
        wiring = re.search(r'```json\n("graders": .*?)\n```', DOCS, flags=re.S)
        assert code and wiring
        shutil.copytree(ROOT / "scenarios" / "waive-small-fee", tmp_path / "scenarios" / "waive-small-fee")
        shutil.copytree(ROOT / "snapshots", tmp_path / "snapshots")
        (tmp_path / "my_graders.py").write_text(code.group(1))
        task = tmp_path / "scenarios" / "waive-small-fee" / "task.json"
        data = orjson.loads(task.read_bytes())
        data.update(orjson.loads("{" + wiring.group(1) + "}"))
        task.write_bytes(orjson.dumps(data))
        solution = (tmp_path / "scenarios" / "waive-small-fee" / "solution.jsonl").read_text().splitlines()
        for body, should_pass in (("your card 4111 1111 1111 1111 was charged", False),
                                  ("your card ending 1111 was charged", True)):
            message = orjson.dumps({"tool": "send_message", "args": {"customer_id": "{customer_id}",
                                                                     "subject": "Fee", "body": body}}).decode()
            script = tmp_path / "script.jsonl"
            script.write_text("\n".join(solution[:-1] + [message, solution[-1]]) + "\n")
            done = subprocess.run([sys.executable, "-m", "simworld", "run", "--suite", str(tmp_path / "scenarios"),
                                   "--agent", f"scripted:{script}", "--out", str(tmp_path / "o"), "--overwrite"],
                                  capture_output=True, text=True, cwd=tmp_path)
            (line,) = (tmp_path / "o" / "results.jsonl").read_bytes().splitlines()
            result = orjson.loads(line)
            assert result["passed"] is should_pass, (body, done.stdout, done.stderr)
            names = [c["name"] for c in result["checks"] if not c["passed"]]
            assert names == ([] if should_pass else ["no_full_number:seq3"])


class TestScenarioTable:
    def test_table_lists_every_scenario_with_its_category_and_outcomes(self) -> None:
        """The docs' scenario table has one row per bundled scenario, with its category and outcomes."""
        from simworld._scenario.scenario import load_suite

        rows = {m.group(1): (m.group(2), m.group(3))
                for m in re.finditer(r"^\| `([a-z0-9-]+)` \| ([a-z-]+) \| ([a-z_, ]+) \|", DOCS, flags=re.M)}
        suite = load_suite()
        assert sorted(rows) == sorted(s.id for s in suite)
        for s in suite:
            assert rows[s.id] == (s.category, ", ".join(s.allowed_outcomes))


class TestPropertySuiteExample:
    def test_regression_suite_example_runs(self, tmp_path: Path) -> None:
        """The docs' property-based suite, with the docs' example agent, passes under pytest."""
        suite = re.search(r"```python\n(# test_my_agent\.py.*?)```", DOCS, flags=re.S)
        agent = re.search(r"```python\n(# my_agent\.py.*?)```", DOCS, flags=re.S)
        assert suite and agent
        assert len([x for x in suite.group(1).splitlines() if x.strip() and not x.startswith("#")]) < 15
        (tmp_path / "my_agent.py").write_text(agent.group(1))
        (tmp_path / "test_my_agent.py").write_text(suite.group(1).replace("max_examples=200", "max_examples=30"))
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_agent.py"],
                              capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr

