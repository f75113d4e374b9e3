"""The entry point: plain ``simworld run`` arguments read without typer, exactly as the typer app reads them."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer

from simworld._edges.cli import _polish, app
from simworld._edges.launch import FLAGS, OPTIONS, read_run

ROOT = Path(__file__).resolve().parent.parent
#: Plain forms the entry point reads itself.
PLAIN = (
    ["run"],
    ["run", "--seed", "42", "--out", "o", "--overwrite"],
    ["run", "--seeds=0..4,9", "--agent", "noop", "--scenario", "a", "--scenario=b", "--json"],
    ["run", "--split", "holdout", "--executor", "ray", "--workers", "2", "--no-isolate", "--trials", "3"],
    ["run", "--fail-under", "0.5", "--temperature=0.7", "--request-timeout", "30", "--max-retries", "0",
     "--shard", "2/4", "--resume", "--no-cache", "--suite", "s/", "--world", "w.json", "--snapshot", "large",
     "--base-url", "http://localhost:8000/v1", "--ray-address", "host:6379", "--concurrency", "4", "--isolate"],
)
#: Forms left to the typer app: help, other commands, values of other shapes, options given twice, mistakes.
NOT_PLAIN: tuple[list[str], ...] = (
    [], ["--help"], ["list"], ["run", "--help"], ["run", "--seed"], ["run", "--seed", "-1"], ["run", "--seed", "1e3"],
    ["run", "--seed", "007"], ["run", "--seed", "+4"], ["run", "--seed", "1", "--seed", "2"], ["run", "--overwrite=1"],
    ["run", "--split", "Dev"], ["run", "--agent", "--json"], ["run", "--out", ""], ["run", "--fail-under", ".5"],
    ["run", "--over"], ["run", "extra"], ["run", "--", "--seed", "1"], ["--version", "run"],
)


def _run_command() -> Any:
    return _polish(typer.main.get_command(app)).commands["run"]


def _as_typer_passes(params: dict[str, Any]) -> dict[str, Any]:
    """The typer app's values as run_command takes them (choices by value, a repeated option as a list)."""
    return {k: v.value if isinstance(v, Enum) else list(v) if isinstance(v, (tuple, list)) else v
            for k, v in params.items()}


class TestTheTwoReadingsAgree:
    def test_every_option_of_run_is_known_with_its_default(self) -> None:
        """OPTIONS and FLAGS name every option of the typer command, with its parameter and default, and no other."""
        seen = set()
        for param in _run_command().params:
            names = [*param.opts, *param.secondary_opts]
            default = param.default.value if isinstance(param.default, Enum) else param.default
            if param.is_flag:
                assert {FLAGS[n][0] for n in names} == {param.name}, names
                assert {FLAGS[n][1] for n in names} == ({True, False} if param.secondary_opts else {True})
                assert default is False
            else:
                (name,) = names
                assert OPTIONS[name][0] == param.name
                assert OPTIONS[name][2] == (() if param.multiple else default), name
                assert (OPTIONS[name][1] == "list") == param.multiple, name
            seen.update(names)
        assert seen == set(OPTIONS) | set(FLAGS)

    @pytest.mark.parametrize("args", PLAIN, ids=lambda a: " ".join(a[1:4]) or "bare")
    def test_a_plain_command_gives_what_typer_gives(self, args: list[str]) -> None:
        """For each plain form, read_run's values are the ones the typer app would pass to the command."""
        typer_values = _as_typer_passes(_run_command().make_context("run", list(args[1:])).params)
        ours = read_run(args, {})
        assert ours is not None
        assert _as_typer_passes(ours) == typer_values

    @pytest.mark.parametrize("args", NOT_PLAIN, ids=lambda a: " ".join(a) or "bare")
    def test_anything_else_goes_to_typer(self, args: list[str]) -> None:
        """Help, other commands and every form not plain are left to the typer app (read_run gives None)."""
        assert read_run(args, {}) is None

    def test_an_option_set_by_the_environment_goes_to_typer(self) -> None:
        """A SIMWORLD_RUN_* variable (or shell completion) sends even a plain command to the typer app."""
        assert read_run(["run"], {"SIMWORLD_RUN_SEED": "3"}) is None
        assert read_run(["run"], {"_SIMWORLD_COMPLETE": "bash_source"}) is None
        assert read_run(["run"], {"SIMWORLD_CACHE_DIR": "/x", "HOME": "/h"}) is not None

    def test_the_run_token_is_not_an_option(self) -> None:
        """The token a run marks its processes with (inherited by a run started inside a run, or by a process after
        an in-process run) sets no option, so a plain command stays plain."""
        from simworld._edges.launch import NOT_OPTIONS
        from simworld._episode.fate import FATE_VARIABLE

        assert {FATE_VARIABLE} == NOT_OPTIONS
        assert read_run(["run", "--seed", "3"], {FATE_VARIABLE: "abc"}) is not None


def _simworld(via: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``simworld ARGS`` through the entry point (``launch``) or through the typer app alone (``typer``)."""
    code = ("import sys; sys.argv[0] = 'simworld'; from simworld._edges.cli import main; main()" if via == "typer"
            else "import sys; sys.argv[0] = 'simworld'; from simworld._edges.launch import main; main()")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMWORLD_PROGRESS_EVERY": "100000"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, cwd=cwd, env=env, timeout=300)


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "run.json"}


def _steady(stdout: bytes) -> bytes:
    """stdout without the episodes-per-second figure, the one wall-clock value the summary shows."""
    return b"\n".join(line.rpartition(b" episodes/s")[2] if b" episodes/s" in line else line
                      for line in stdout.splitlines())


class TestTheSameBytes:
    @pytest.mark.parametrize("args", [
        ["--agent", "reference", "--seeds", "0..1", "--scenario", "waive-small-fee", "--scenario",
         "split-balance-three-ways"],
        ["--agent", "noop", "--seed", "2", "--scenario", "waive-small-fee", "--trials", "2"],
        ["--agent", "random", "--seed", "1", "--scenario", "split-balance-three-ways", "--json"],
    ], ids=["reference", "noop", "random-json"])
    def test_a_run_prints_and_writes_what_the_typer_app_does(self, tmp_path: Path, args: list[str]) -> None:
        """The same run through the entry point and through the typer app: same stdout, stderr, status and files."""
        done = {}
        for via in ("launch", "typer"):
            (tmp_path / via).mkdir()
            done[via] = _simworld(via, ["run", *args, "--out", "out"], tmp_path / via)
        launch, typer_ = done["launch"], done["typer"]
        assert launch.returncode == typer_.returncode and launch.returncode in (0, 1), launch.stderr
        assert launch.stderr == typer_.stderr
        if "--json" in args:  # run.json's fields: wall-clock figures differ, the rest not
            assert b'"ran": 1' in launch.stdout and b'"ran": 1' in typer_.stdout
        else:
            assert _steady(launch.stdout) == _steady(typer_.stdout)
        assert _files(tmp_path / "launch" / "out") == _files(tmp_path / "typer" / "out") != {}

    @pytest.mark.parametrize("args", [
        ["--seed", "1", "--seeds", "2..3"], ["--shard", "5/2"], ["--scenario", "no-such-scenario"],
        ["--agent", "python:no_such_module:Agent"], ["--fail-under", "2"], ["--trials", "0"],
    ], ids=["seed-and-seeds", "shard", "scenario", "agent", "fail-under", "trials"])
    def test_a_bad_argument_is_the_same_one_line(self, tmp_path: Path, args: list[str]) -> None:
        """A plain command with a bad value: the same one error line and status 2 both ways."""
        launch = _simworld("launch", ["run", *args, "--out", "o"], tmp_path)
        typer_ = _simworld("typer", ["run", *args, "--out", "o"], tmp_path)
        assert launch.returncode == typer_.returncode == 2
        assert launch.stdout == typer_.stdout == b""
        assert launch.stderr == typer_.stderr and launch.stderr.startswith(b"simworld: error: ")
        assert launch.stderr.count(b"\n") == 1


class TestTheRunPathStaysLight:
    def test_a_run_imports_no_command_line_library_and_no_extra(self, tmp_path: Path) -> None:
        """`simworld run` of simworld's own agent imports none of typer, click, pydantic, rich, hypothesis,
        freezegun (no foreign code runs: see test_guard.py), the process pools, the integrations' packages, or
        simworld's report, export, serve and integration modules."""
        code = ("import runpy, sys\n"
                "sys.argv = ['simworld', 'run', '--scenario', 'waive-small-fee', '--out', 'o']\n"
                "try:\n    runpy.run_module('simworld', run_name='__main__')\nexcept SystemExit as exc:\n"
                "    assert exc.code == 0, exc.code\n"
                "print(sorted(sys.modules))\n")
        # this process's environment as it is: after an in-process run of another test it holds the run token
        env = dict(os.environ)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env={**env, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        loaded = ast.literal_eval(done.stdout.strip().splitlines()[-1])
        assert "simworld._running.runner" in loaded  # the check looks at a process that ran
        heavy = ("typer", "click", "pydantic", "rich", "hypothesis", "freezegun", "multiprocessing", "concurrent",
                 "inspect_ai", "gymnasium", "verifiers", "ray",
                 "mcp", "httpx", "simworld._edges.cli", "simworld._edges.report", "simworld._edges.export",
                 "simworld._edges.serve", "simworld._edges.inspect", "simworld._running.strategies")
        found = [m for m in loaded if m.split(".")[0] in heavy or m in heavy]
        assert found == [], (f"{len(found)} heavy modules: {found[:12]}; SIMWORLD_ variables: "
                             f"{sorted(k for k in env if k.startswith('SIMWORLD'))}")
