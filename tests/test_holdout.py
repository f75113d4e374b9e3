"""Holdout stays held out: `serve`, `show` and `check` refuse holdout and negative seeds on the dev split,
reach holdout worlds only through `--split holdout`, and `show` never prints one. A holdout instance (a family's
reserved parameter point, task.json "split": "holdout") is refused by every command and entry point outside the
holdout split, runs in it at holdout seeds, and is never exported."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import copy_suite, simworld

from simworld._edges.show import render_scenario
from simworld._running.check import check_scenario
from simworld._scenario.scenario import load_suite
from simworld._world.splits import HOLDOUT_BASE, check_seed, effective_seed
from simworld.errors import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = "waive-small-fee"
#: A seed in the holdout range that was once served as a dev seed.
HELD_OUT = 77480505
(WAIVE,) = load_suite(None, [SCENARIO])


def _simworld(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m simworld ARGS` in ``tmp_path``, stdin closed (a stdio server that started would see EOF)."""
    return subprocess.run([sys.executable, "-m", "simworld", *args], capture_output=True, text=True, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, timeout=300)


def _refused(done: subprocess.CompletedProcess[str], tmp_path: Path) -> str:
    """The one error line of a refused command that printed and wrote nothing else."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("simworld: error: "), done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
    return done.stderr


class TestCheckSeed:
    def test_dev_refuses_negative_and_holdout_seeds_naming_the_option(self) -> None:
        """A negative seed or a dev seed in the holdout range is refused with the option and the fix."""
        with pytest.raises(ScenarioError, match=r"^--seed -1 is negative"):
            check_seed(-1, "dev")
        with pytest.raises(ScenarioError, match=r"^--seeds 1000000 is reserved .* use --split holdout --seeds A\.\.B"):
            check_seed(HOLDOUT_BASE, "dev", "--seeds")
        with pytest.raises(ScenarioError, match="--split 'test' is unknown"):
            check_seed(1, "test")

    def test_holdout_takes_indices(self) -> None:
        """On the holdout split any index from 0 is taken, even one past the base; a negative one is not."""
        check_seed(HELD_OUT, "holdout")
        with pytest.raises(ScenarioError, match="negative"):
            check_seed(-1, "holdout")


class TestServe:
    @pytest.mark.parametrize("seed", [str(HELD_OUT), str(HOLDOUT_BASE), "-1"])
    @pytest.mark.parametrize("transport", ["stdio", "http"])
    def test_dev_serve_refuses_holdout_and_negative_seeds(self, tmp_path: Path, seed: str, transport: str) -> None:
        """`serve --seed N` with N in the holdout range or negative is one line naming --seed; nothing is served."""
        err = _refused(_simworld(tmp_path, "serve", "--scenario", SCENARIO, "--seed", seed, "--transport", transport,
                                 "--port", "0", "--out", "out"), tmp_path)
        assert f"--seed {seed}" in err
        assert ("--split holdout" in err) if seed != "-1" else ("seeds start at 0" in err)

    def test_holdout_serve_plays_the_reserved_seed(self, tmp_path: Path) -> None:
        """`serve --split holdout --seed 2` serves the scenario's 2nd holdout world: its request and its seed."""
        import anyio
        from mcp import ClientSession, StdioServerParameters, stdio_client

        held = effective_seed(SCENARIO, 2, "holdout")
        params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
            "-m", "simworld", "serve", "--scenario", SCENARIO, "--split", "holdout", "--seed", "2",
            "--out", str(tmp_path / "out")])

        async def main() -> Any:
            with (tmp_path / "server.log").open("w") as errlog, anyio.fail_after(90):
                async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                    init = await session.initialize()
                    await session.call_tool("decline", {"reason": "Testing."})
                    return init.instructions

        instructions = anyio.run(main)
        assert WAIVE.request(WAIVE.instance(held).vars) in instructions
        (line,) = [orjson.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_bytes().splitlines()]
        assert line["seed"] == held and line["outcome"] == "decline"


class TestShow:
    @pytest.mark.parametrize("seed", [str(HELD_OUT), str(HOLDOUT_BASE)])
    def test_show_refuses_a_seed_in_the_holdout_range(self, tmp_path: Path, seed: str) -> None:
        """`show --seed N` with N in the holdout range is one line: it would leak a holdout world."""
        err = _refused(_simworld(tmp_path, "show", SCENARIO, "--seed", seed), tmp_path)
        assert f"--seed {seed}" in err and "leak" in err and f"dev seed below {HOLDOUT_BASE}" in err

    def test_show_refuses_a_negative_seed(self, tmp_path: Path) -> None:
        """`show --seed -1` is one line naming the seed."""
        err = _refused(_simworld(tmp_path, "show", SCENARIO, "--seed", "-1"), tmp_path)
        assert "--seed -1 is negative" in err

    def test_show_refuses_the_holdout_split(self, tmp_path: Path) -> None:
        """`show --split holdout` is refused whatever the seed: showing a holdout world would leak it."""
        err = _refused(_simworld(tmp_path, "show", SCENARIO, "--split", "holdout", "--seed", "3"), tmp_path)
        assert "--split holdout" in err and "leak" in err

    def test_render_refuses_holdout_seeds_to_any_caller(self) -> None:
        """render_scenario itself refuses a holdout-range seed, so no caller can print a holdout world."""
        with pytest.raises(ScenarioError, match="holdout"):
            render_scenario(WAIVE, effective_seed(SCENARIO, 0, "holdout"))

    def test_show_dev_split_still_shows(self, tmp_path: Path) -> None:
        """`show --split dev --seed 4` prints the world as before."""
        done = _simworld(tmp_path, "show", SCENARIO, "--split", "dev", "--seed", "4")
        assert done.returncode == 0 and f"# {SCENARIO} (seed 4)" in done.stdout


class TestCheck:
    @pytest.mark.parametrize("seeds", ["1000000..1000001", f"0,{HELD_OUT}"])
    def test_dev_check_refuses_holdout_seeds(self, tmp_path: Path, seeds: str) -> None:
        """`check --seeds` reaching the holdout range is one line naming --seeds and --split holdout."""
        err = _refused(_simworld(tmp_path, "check", "--scenario", SCENARIO, "--seeds", seeds), tmp_path)
        assert "--seeds" in err and "--split holdout" in err

    def test_check_refuses_negative_seeds_and_unknown_splits(self, tmp_path: Path) -> None:
        """`check --seeds -1` and `check --split test` are one line each."""
        assert "--seeds" in _refused(_simworld(tmp_path, "check", "--scenario", SCENARIO, "--seeds", "-1"), tmp_path)
        err = _refused(_simworld(tmp_path, "check", "--scenario", SCENARIO, "--split", "test"), tmp_path)
        assert "Invalid value for '--split': 'test' is not one of 'dev', 'holdout'" in err

    def test_holdout_check_checks_the_reserved_seeds(self, tmp_path: Path) -> None:
        """`check --split holdout --seeds 0..1` checks the scenario's first two holdout seeds and says so."""
        done = _simworld(tmp_path, "check", "--scenario", SCENARIO, "--split", "holdout", "--seeds", "0..1")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "split holdout, holdout seed #0..1" in done.stdout
        report = check_scenario(WAIVE, [0, 1], split="holdout")
        assert report.ok and report.seeds == 2
        assert {o.seed for o in report.outcomes} == {effective_seed(SCENARIO, n, "holdout") for n in (0, 1)}

    def test_check_scenario_refuses_a_dev_seed_in_the_holdout_range(self) -> None:
        """check_scenario on the dev split refuses a holdout-range seed before playing anything."""
        with pytest.raises(ScenarioError, match="reserved for the holdout split"):
            check_scenario(WAIVE, [0, HOLDOUT_BASE])


# -- holdout instances: a family's reserved parameter points, held out whatever the seed ------------------------

FAMILY = "split-into-n"


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite of two holdout instances of a family, generated as a user would (``--split holdout``)."""
    out = tmp_path_factory.mktemp("families") / "genh"
    done = simworld("families", "generate", FAMILY, "--split", "holdout", "--count", "2", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"simworld check --suite {out} --split holdout" in done.stdout
    return out


def _ids(suite: Path) -> list[str]:
    return sorted(p.name for p in suite.iterdir() if (p / "task.json").exists())


def _one_line(done: subprocess.CompletedProcess[str], cwd: Path) -> str:
    """The one error line of a command that refused (exit 2) and wrote nothing in ``cwd``."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("simworld: error: "), done.stderr
    assert "Traceback" not in done.stderr and list(cwd.iterdir()) == []
    return done.stderr


class TestHoldoutInstanceIsMarked:
    def test_task_json_says_holdout_and_the_scenario_exposes_it(self, held: Path) -> None:
        """A holdout instance's task.json carries "split": "holdout" and loads as a holdout Scenario."""
        for sid in _ids(held):
            assert orjson.loads((held / sid / "task.json").read_bytes())["split"] == "holdout"
        assert {s.split for s in load_suite(held)} == {"holdout"}
        assert WAIVE.split == "dev"

    def test_an_unknown_split_is_a_load_error_naming_file_key_and_values(self, tmp_path: Path) -> None:
        """task.json "split": "test" is one line naming the file, the key and the allowed values."""
        suite = copy_suite(tmp_path, SCENARIO, split="test")
        done = simworld("list", "--suite", str(suite))
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{suite / SCENARIO / 'task.json'}: split: 'test' is not allowed; allowed: dev, holdout" in done.stderr


    def test_list_marks_holdout_instances_and_hides_what_they_test(self, held: Path) -> None:
        """`list` names each holdout instance as such, without its outcomes or description."""
        done = simworld("list", "--suite", str(held))
        assert done.returncode == 0, done.stderr
        scenarios = {s.id: s for s in load_suite(held)}
        for line in done.stdout.splitlines():
            sid = line.split()[0]
            assert "(holdout)" in line and "--split holdout" in line
            assert scenarios[sid].description not in line and ",".join(scenarios[sid].allowed_outcomes) not in line
        assert sorted(line.split()[0] for line in done.stdout.splitlines()) == _ids(held)


class TestRun:
    def test_dev_run_refuses_a_suite_with_holdout_instances(self, held: Path, tmp_path: Path) -> None:
        """`run --suite` over holdout instances is one line naming them and --split holdout; nothing is written."""
        err = _one_line(simworld("run", "--suite", str(held), "--out", "out", cwd=tmp_path), tmp_path)
        assert all(sid in err for sid in _ids(held)) and "--split holdout" in err

    def test_a_mixed_suite_names_only_the_holdout_instances(self, held: Path, tmp_path: Path) -> None:
        """A dev scenario beside a holdout instance: the refusal names the instance, not the dev scenario."""
        suite = tmp_path / "mixed"
        shutil.copytree(ROOT / "scenarios" / SCENARIO, suite / SCENARIO)
        (sid, _) = _ids(held)
        shutil.copytree(held / sid, suite / sid)
        work = tmp_path / "work"
        work.mkdir()
        err = _one_line(simworld("run", "--suite", str(suite), "--out", "out", cwd=work), work)
        assert repr(sid) in err and SCENARIO not in err
        done = simworld("run", "--suite", str(suite), "--scenario", SCENARIO, "--out", "out", cwd=work)
        assert done.returncode == 0, done.stdout + done.stderr

    def test_world_file_of_a_holdout_instance_is_refused(self, held: Path, tmp_path: Path) -> None:
        """`run --world` pins a dev world, so a world file naming a holdout instance is refused."""
        sid = _ids(held)[0]
        (tmp_path / "w.json").write_bytes(orjson.dumps({"scenario": sid, "world": {}}))
        done = simworld("run", "--world", "w.json", "--suite", str(held), "--out", "out", cwd=tmp_path)
        assert done.returncode == 2 and "holdout instance" in done.stderr and not (tmp_path / "out").exists()

    def test_holdout_run_plays_them_at_holdout_seeds_and_export_writes_none(self, held: Path, tmp_path: Path) -> None:
        """With --split holdout they run at their reserved holdout seeds; exporting the run writes zero lines and
        counts each episode as holdout; the result lines carry nothing a dev line lacks."""
        done = simworld("run", "--suite", str(held), "--split", "holdout", "--seed", "1", "--out", "run",
                        cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = [orjson.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_bytes().splitlines()]
        assert sorted(r["scenario"] for r in lines) == _ids(held)
        assert all(r["seed"] == effective_seed(r["scenario"], 1, "holdout") >= HOLDOUT_BASE for r in lines)
        dev = simworld("run", "--scenario", SCENARIO, "--out", "dev", cwd=tmp_path)
        assert dev.returncode == 0
        (dev_line,) = [orjson.loads(x) for x in (tmp_path / "dev" / "results.jsonl").read_bytes().splitlines()]
        assert all(set(r) == set(dev_line) for r in lines)
        for fmt in ("native", "openai", "trl"):
            export = simworld("export", "run", "--format", fmt, cwd=tmp_path)
            assert export.returncode == 0 and export.stdout == "", export.stderr
            assert f"exported 0 episode(s) as {fmt}; 0 filtered out, 2 holdout episode(s) never exported" \
                in export.stderr


class TestEveryCommandRefuses:
    def test_show_refuses_a_holdout_instance(self, held: Path, tmp_path: Path) -> None:
        """`show` never prints a holdout instance, at any dev seed."""
        err = _one_line(simworld("show", _ids(held)[0], "--suite", str(held), cwd=tmp_path), tmp_path)
        assert "holdout instance" in err and "leak" in err

    def test_check_refuses_on_dev_and_checks_on_holdout(self, held: Path, tmp_path: Path) -> None:
        """`check --suite` of holdout instances needs --split holdout; with it their graders are proven."""
        err = _one_line(simworld("check", "--suite", str(held), "--seeds", "0", cwd=tmp_path), tmp_path)
        assert all(sid in err for sid in _ids(held)) and "--split holdout" in err
        done = simworld("check", "--suite", str(held), "--split", "holdout", "--seeds", "0..1", cwd=tmp_path)
        assert done.returncode == 0 and "split holdout, holdout seed #0..1" in done.stdout, done.stdout

    @pytest.mark.parametrize("transport", ["stdio", "http"])
    def test_serve_refuses_a_holdout_instance(self, held: Path, tmp_path: Path, transport: str) -> None:
        """`serve` of a holdout instance on the dev split is one line; nothing is served or written."""
        err = _refused(_simworld(tmp_path, "serve", "--scenario", _ids(held)[0], "--suite", str(held), "--transport",
                                 transport, "--port", "0", "--out", "out"), tmp_path)
        assert "holdout instance" in err and "--split holdout" in err

    def test_probe_refuses_a_holdout_instance(self, held: Path, tmp_path: Path) -> None:
        """`probe` tunes on the worlds it finds, so it never probes a holdout instance."""
        done = simworld("probe", "--scenario", _ids(held)[0], "--suite", str(held), "--db", "db", cwd=tmp_path)
        assert done.returncode == 2 and "holdout instance" in done.stderr and list(tmp_path.iterdir()) == []


class TestPythonApi:
    def test_make_refuses_a_holdout_seed_unless_asked(self) -> None:
        """make(seed=S) with S in the holdout range is refused as the CLI refuses it; split='holdout' reads S as
        an index into the scenario's holdout seeds."""
        import simworld as sw

        with pytest.raises(ScenarioError, match=r"^seed 1000000 is reserved for the holdout split .* "
                                                r"use split='holdout' with seed=N"):
            sw.make(SCENARIO, seed=HOLDOUT_BASE)
        with pytest.raises(ScenarioError, match="negative"):
            sw.make(SCENARIO, seed=-1)
        assert sw.make(SCENARIO, seed=HOLDOUT_BASE, split="holdout").seed == \
            effective_seed(SCENARIO, HOLDOUT_BASE, "holdout")
        assert sw.make(SCENARIO, seed=3).seed == 3

    def test_make_and_environment_refuse_a_holdout_instance(self, held: Path) -> None:
        """make() of a holdout instance needs split='holdout', and no Environment plays one at a dev seed."""
        import simworld as sw

        instance = load_suite(held)[0]
        with pytest.raises(ScenarioError, match="holdout instance.*split='holdout'"):
            sw.make(instance)
        with pytest.raises(ScenarioError, match="holdout instance"):
            sw.make(instance, world={})
        with pytest.raises(ScenarioError, match="runs only at holdout seeds"):
            sw.Environment(instance, 3)
        env = sw.make(instance, seed=2, split="holdout")
        assert env.seed == effective_seed(instance.id, 2, "holdout") and env.reset().request

    def test_run_suite_refuses_a_holdout_instance_on_dev(self, held: Path, tmp_path: Path) -> None:
        """run_suite over scenarios loaded by hand refuses a holdout instance before writing anything."""
        from simworld import build_agent_factory, run_suite

        with pytest.raises(ScenarioError, match="holdout instances"):
            run_suite(load_suite(held), [0], "noop", build_agent_factory("noop"), tmp_path / "out")
        assert not (tmp_path / "out").exists()

    def test_gym_refuses_unless_holdout(self, held: Path) -> None:
        """The Gymnasium environment refuses a suite of holdout instances on dev; on holdout its grid is holdout."""
        gym = pytest.importorskip("simworld._edges.gym")
        with pytest.raises(ScenarioError, match="holdout instances"):
            gym.SimworldEnv(suite=held, seeds=0)
        env = gym.SimworldEnv(suite=held, seeds=0, split="holdout")
        assert all(seed >= HOLDOUT_BASE for _, seed in env.grid)

    def test_inspect_refuses_unless_holdout(self, held: Path) -> None:
        """The Inspect task refuses a suite of holdout instances on dev; on holdout its samples are holdout."""
        inspect = pytest.importorskip("simworld._edges.inspect")
        with pytest.raises(ScenarioError, match="holdout instances"):
            inspect.suite(suite=str(held))
        task = inspect.suite(suite=str(held), split="holdout")
        assert all(s.metadata["seed"] >= HOLDOUT_BASE and s.metadata["split"] == "holdout" for s in task.dataset)

    def test_verifiers_refuses_unless_holdout(self, held: Path) -> None:
        """The verifiers environment refuses a suite of holdout instances on dev; on holdout its grid is holdout."""
        verifiers = pytest.importorskip("simworld._edges.verifiers")
        with pytest.raises(ScenarioError, match="holdout instances"):
            verifiers.load_environment(suite=held, seeds=0)
        env = verifiers.load_environment(suite=held, seeds=0, split="holdout")
        assert all(seed >= HOLDOUT_BASE for _, seed in env.grid)
