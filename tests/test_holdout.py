"""Holdout stays held out: `serve`, `show` and `check` refuse holdout and negative seeds on the dev split,
reach holdout worlds only through `--split holdout`, and `show` never prints one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

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
