"""The command line as a user runs it: one end-to-end test per command, and its errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
from helpers import copy_suite, simworld

ROOT = Path(__file__).resolve().parent.parent



class TestList:
    def test_lists_every_bundled_scenario(self) -> None:
        """`simworld list` prints one line per scenario directory with its category."""
        done = simworld("list")
        assert done.returncode == 0, done.stderr
        ids = sorted(p.name for p in (ROOT / "scenarios").iterdir() if (p / "task.json").exists())
        lines = done.stdout.strip().splitlines()
        assert [line.split()[0] for line in lines] == ids


class TestRun:
    def test_reference_run_writes_everything(self, tmp_path: Path) -> None:
        """`simworld run --seed 42` passes every scenario and writes results.jsonl, events/ and run.json."""
        out = tmp_path / "out"
        done = simworld("run", "--seed", "42", "--out", str(out))
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[0].split() == ["scenario", "seed", "outcome", "passed", "score"]
        results = [orjson.loads(line) for line in (out / "results.jsonl").read_bytes().splitlines()]
        n = len(list((ROOT / "scenarios").iterdir()))
        assert len(results) == n and all(r["passed"] for r in results)
        for r in results:
            assert {"scenario", "seed", "agent", "outcome", "state_hash", "events_hash"} <= set(r)
        assert len(list((out / "events").iterdir())) == n
        meta = orjson.loads((out / "run.json").read_bytes())
        assert meta["episodes"] == n and meta["agent"] == "reference"

    def test_noop_fails_and_exits_1(self, tmp_path: Path) -> None:
        """The do-nothing agent fails every scenario and the run exits 1."""
        out = tmp_path / "out"
        done = simworld("run", "--agent", "noop", "--out", str(out))
        assert done.returncode == 1
        results = [orjson.loads(line) for line in (out / "results.jsonl").read_bytes().splitlines()]
        assert results and not any(r["passed"] for r in results)

    def test_one_scenario_and_a_user_agent(self, tmp_path: Path) -> None:
        """--scenario selects; --agent python:module:Class runs a user's agent from the working directory."""
        (tmp_path / "my_agent.py").write_text(
            "class Agent:\n"
            "    def act(self, obs):\n"
            "        if obs.last_tool is None:\n"
            "            return {'tool': 'get_plan', 'args': {'plan_id': 'pln_001'}}\n"
            "        return {'tool': 'decline', 'args': {'reason': 'I will not.'}}\n")
        done = simworld("run", "--scenario", "split-balance-three-ways", "--agent", "python:my_agent:Agent",
                        "--out", "o", cwd=tmp_path)
        assert done.returncode == 1
        (r,) = [orjson.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_bytes().splitlines()]
        assert r["outcome"] == "decline" and r["agent"] == "python:my_agent:Agent" and not r["passed"]

    def test_scripted_agent(self, tmp_path: Path) -> None:
        """--agent scripted:FILE plays a JSONL script, with the seed's templates filled in."""
        src = ROOT / "scenarios" / "split-balance-three-ways" / "solution-remainder-last.jsonl"
        done = simworld("run", "--scenario", "split-balance-three-ways", "--agent", f"scripted:{src}",
                        "--seed", "5", "--out", str(tmp_path / "o"))
        assert done.returncode == 0, done.stdout + done.stderr


class TestErrors:
    def _one_line(self, done: subprocess.CompletedProcess[str]) -> str:
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        return done.stderr

    def test_unknown_agent(self) -> None:
        """An unknown --agent is one line listing the agents there are."""
        err = self._one_line(simworld("run", "--agent", "clever"))
        assert "clever" in err and "reference, noop, random" in err and err.count("\n") == 1

    def test_unknown_scenario(self) -> None:
        """An unknown --scenario names it and lists what is available."""
        err = self._one_line(simworld("run", "--scenario", "nope"))
        assert "'nope'" in err and "split-balance-three-ways" in err

    def test_bad_flag(self) -> None:
        """A flag that does not exist is one line naming it and the options there are."""
        err = self._one_line(simworld("run", "--sed", "3"))
        assert "--sed" in err and "--seed" in err and err.count("\n") == 1

    def test_bad_value_and_command(self) -> None:
        """A bad option value or an unknown command is one line, exit 2."""
        err = self._one_line(simworld("run", "--seed", "abc"))
        assert "--seed" in err and err.count("\n") == 1
        err = self._one_line(simworld("frobnicate"))
        assert "frobnicate" in err and err.count("\n") == 1

    def test_bare_command_prints_help(self) -> None:
        """`simworld` alone prints the help and exits 0."""
        done = simworld()
        assert done.returncode == 0 and "Commands:" in done.stdout and done.stderr == ""

    def test_missing_python_agent(self, tmp_path: Path) -> None:
        """python:MODULE:ATTR naming a missing module is one line naming it."""
        err = self._one_line(simworld("run", "--agent", "python:no_such_mod:A", cwd=tmp_path))
        assert "no_such_mod" in err

    def test_malformed_scenario_fails_at_load(self, tmp_path: Path) -> None:
        """A task.json with an unknown key fails the run at load, naming the file, the key and allowed keys."""
        suite = copy_suite(tmp_path, "split-balance-three-ways")
        task = suite / "split-balance-three-ways" / "task.json"
        data = orjson.loads(task.read_bytes())
        data["reward"] = 1
        task.write_bytes(orjson.dumps(data))
        err = self._one_line(simworld("run", "--suite", str(suite), "--out", str(tmp_path / "o")))
        assert "task.json" in err and "'reward'" in err and "allowed" in err
        assert not (tmp_path / "o" / "results.jsonl").exists()

    def test_bad_category_and_outcome(self, tmp_path: Path) -> None:
        """An unknown category or outcome class names the allowed values."""
        suite = copy_suite(tmp_path, "split-balance-three-ways")
        task = suite / "split-balance-three-ways" / "task.json"
        data = orjson.loads(task.read_bytes())
        task.write_bytes(orjson.dumps({**data, "category": "magic"}))
        err = self._one_line(simworld("list", "--suite", str(suite)))
        assert "'magic'" in err and "reschedule" in err
        task.write_bytes(orjson.dumps({**data, "allowed_outcomes": ["shrug"]}))
        err = self._one_line(simworld("list", "--suite", str(suite)))
        assert "'shrug'" in err and "request_information" in err

    def test_solution_with_unknown_tool(self, tmp_path: Path) -> None:
        """A solution line naming an unknown tool fails at load with file:line."""
        suite = copy_suite(tmp_path, "split-balance-three-ways")
        sol = suite / "split-balance-three-ways" / "solution-remainder-last.jsonl"
        sol.write_text('{"tool": "teleport", "args": {}}\n')
        err = self._one_line(simworld("list", "--suite", str(suite)))
        assert "solution-remainder-last.jsonl:1" in err and "teleport" in err

    def test_prompt_placeholder_typo(self, tmp_path: Path) -> None:
        """A prompt placeholder that is not a variable fails at load and lists the known ones."""
        suite = copy_suite(tmp_path, "split-balance-three-ways")
        (suite / "split-balance-three-ways" / "prompt.md").write_text("Split my {balanse} please")
        err = self._one_line(simworld("list", "--suite", str(suite)))
        assert "{balanse}" in err and "unpaid_balance" in err


#: Every command of the CLI, for the conventions every one of them follows.
COMMANDS = ("run", "merge", "list", "replay", "show", "generate", "probe", "export", "report", "serve", "grade",
            "check")


class TestConventions:
    def test_version(self) -> None:
        """`simworld --version` prints the installed version and exits 0."""
        from simworld._running.runner import simworld_version

        done = simworld("--version")
        assert done.returncode == 0 and done.stdout == f"simworld {simworld_version()}\n"

    def test_every_command_is_listed(self) -> None:
        """The root help lists exactly the commands these tests cover, and offers shell completion."""
        done = simworld("--help")
        listed = done.stdout.split("Commands:")[1].split()
        assert set(COMMANDS) <= set(listed)
        assert "--install-completion" in done.stdout and "--show-completion" in done.stdout

    def test_every_option_has_an_environment_variable_in_help(self) -> None:
        """Each command's options are settable by SIMWORLD_COMMAND_OPTION, named in --help; no <list[...]>."""
        import re

        for command in COMMANDS:
            text = simworld(command, "--help").stdout
            options = set(re.findall(r"^\s+--([a-z][a-z-]*)", text, re.M)) - {"help"}
            assert options, command
            flat = " ".join(text.split())
            for option in options:
                var = "SIMWORLD_TOKEN" if (command, option) == ("serve", "token") else \
                    f"SIMWORLD_{command.upper()}_{option.upper().replace('-', '_')}"
                assert var in flat, (command, option, var)
            assert "<list[" not in text, command

    def test_environment_variable_sets_an_option(self, tmp_path: Path) -> None:
        """SIMWORLD_RUN_SEEDS and SIMWORLD_RUN_SCENARIO act like --seeds and --scenario."""
        import os
        import sys

        env = {**os.environ, "SIMWORLD_RUN_SEEDS": "3..4", "SIMWORLD_RUN_SCENARIO": "waive-small-fee"}
        done = subprocess.run([sys.executable, "-m", "simworld", "run", "--out", str(tmp_path / "o")], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        seeds = [orjson.loads(x)["seed"] for x in (tmp_path / "o" / "results.jsonl").read_bytes().splitlines()]
        assert seeds == [3, 4]

    def test_choices_are_typed(self) -> None:
        """--split, --format and --transport show their choices in help and refuse other values (exit 2)."""
        assert "<dev|holdout>" in simworld("run", "--help").stdout
        assert "<native|openai|trl>" in simworld("export", "--help").stdout
        assert "<stdio|http>" in simworld("serve", "--help").stdout
        for args, name in ((("run", "--split", "test"), "--split"), (("export", "x", "--format", "csv"), "--format"),
                           (("serve", "--scenario", "waive-small-fee", "--transport", "ws"), "--transport")):
            done = simworld(*args)
            assert done.returncode == 2 and f"Invalid value for '{name}'" in done.stderr, done.stderr
            assert done.stderr.count("\n") == 1 and "Value error" not in done.stderr

    def test_agent_help_lists_every_kind(self) -> None:
        """run's and probe's --agent help name every agent kind, every drift among them."""
        from simworld._agents.drift import DRIFTS

        for command in ("run", "probe"):
            flat = " ".join(simworld(command, "--help").stdout.split())
            for kind in ("reference", "noop", "random", "drift:", "scripted:", "cmd:", "openai:", "python:", *DRIFTS):
                assert kind in flat, (command, kind)

    def test_run_json(self, tmp_path: Path) -> None:
        """run --json prints the summary as one JSON document on stdout; progress stays on stderr."""
        import os
        import sys

        env = {**os.environ, "SIMWORLD_PROGRESS_EVERY": "0"}
        done = subprocess.run([sys.executable, "-m", "simworld", "run", "--scenario", "waive-small-fee", "--agent",
                               "noop", "--seeds", "0..1", "--json", "--out", str(tmp_path / "o")], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stderr
        summary = orjson.loads(done.stdout)
        assert (summary["episodes"], summary["passed"], summary["status"]) == (2, 0, "complete")
        assert summary["out"] == str(tmp_path / "o") and "progress:" in done.stderr

    def test_no_colour(self, tmp_path: Path) -> None:
        """With NO_COLOR set (and a colour forced), no output carries an ANSI escape."""
        import os
        import sys

        env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
        for args in (("run", "--help"), ("run", "--sed", "1"), ("run", "--scenario", "waive-small-fee", "--out",
                                                               str(tmp_path / "o"))):
            done = subprocess.run([sys.executable, "-m", "simworld", *args], env=env, capture_output=True,
                                  text=True, timeout=300)
            assert "\x1b[" not in done.stdout + done.stderr, args
