"""Long runs that lose nothing: sweeps, streamed results, kill and resume, shards and merge, hard limits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import orjson
import pytest
from helpers import copy_suite, docs_text, simworld

from simworld._agents.kinds import build_agent_factory
from simworld._running.rundir import ResultsFile, read_results
from simworld._running.runner import grid, run_suite
from simworld._scenario.scenario import load_suite
from simworld._world.splits import format_seeds, parse_seeds
from simworld.errors import RunDirError, ScenarioError

# Three scenarios of different kinds keep the sweeps small but not uniform.
FEW = ("waive-small-fee", "split-balance-three-ways", "move-paid-instalment")


def _scenario_args(*ids: str) -> list[str]:
    return [arg for sid in ids for arg in ("--scenario", sid)]


def _lines(run: Path) -> list[dict]:
    return [orjson.loads(x) for x in (run / "results.jsonl").read_bytes().splitlines()]


def _meta(run: Path) -> dict:
    return orjson.loads((run / "run.json").read_bytes())


def _same_run(a: Path, b: Path) -> None:
    """Byte-identical results.jsonl and event files."""
    assert (a / "results.jsonl").read_bytes() == (b / "results.jsonl").read_bytes()
    names = sorted(p.name for p in (a / "events").iterdir())
    assert names == sorted(p.name for p in (b / "events").iterdir())
    for name in names:
        assert (a / "events" / name).read_bytes() == (b / "events" / name).read_bytes(), name


class TestSeedLists:
    def test_forms(self) -> None:
        """A..B is inclusive, commas list seeds, forms mix, and a repeated seed runs once in the order given."""
        assert parse_seeds("0..3") == [0, 1, 2, 3]
        assert parse_seeds("3,7,11") == [3, 7, 11]
        assert parse_seeds("0..2,9,1") == [0, 1, 2, 9]
        assert parse_seeds("5") == [5]

    @pytest.mark.parametrize("text", ["", "a", "3..1", "-1..2", "1,,2", "0..x", "1.5"])
    def test_malformed(self, text: str) -> None:
        """A malformed seed list names itself and the accepted forms."""
        with pytest.raises(ScenarioError, match="--seeds"):
            parse_seeds(text)

    def test_too_many(self) -> None:
        """A typo that names billions of seeds fails at once instead of filling memory."""
        with pytest.raises(ScenarioError, match="more than"):
            parse_seeds("0..10000000000")

    @pytest.mark.parametrize("seeds", [[0], [0, 1], [0, 1, 2], [3, 7, 11], [0, 1, 2, 9], [5, 4]])
    def test_format_round_trips(self, seeds: list[int]) -> None:
        """format_seeds spells a list that parse_seeds reads back to the same list."""
        assert parse_seeds(format_seeds(seeds)) == seeds

    def test_sweep_from_the_command_line(self, tmp_path: Path) -> None:
        """--seeds 0..2 runs every scenario at every seed, in grid order, and the summary names the seeds."""
        done = simworld("run", "--seeds", "0..2", *_scenario_args(*FEW[:2]), "--out", str(tmp_path / "o"))
        assert done.returncode == 0, done.stderr
        keys = [(r["scenario"], r["seed"]) for r in _lines(tmp_path / "o")]
        assert keys == [(s, seed) for s in FEW[:2] for seed in (0, 1, 2)]
        assert "split dev, seeds 0..2" in done.stdout

    def test_holdout_sweep_names_the_split(self, tmp_path: Path) -> None:
        """A holdout sweep runs each scenario's reserved seeds and says so (not 'seed 0')."""
        done = simworld("run", "--split", "holdout", "--seeds", "0,1", *_scenario_args(FEW[0]),
                        "--out", str(tmp_path / "o"))
        assert done.returncode == 0, done.stderr
        seeds = [r["seed"] for r in _lines(tmp_path / "o")]
        assert len(set(seeds)) == 2 and all(s >= 1_000_000 for s in seeds)
        assert "split holdout, holdout seed #0,1" in done.stdout

    def test_seed_and_seeds_together_refused(self, tmp_path: Path) -> None:
        """--seed and --seeds together is one clear error, exit 2, nothing written."""
        done = simworld("run", "--seed", "1", "--seeds", "0..2", "--out", str(tmp_path / "o"))
        assert done.returncode == 2 and "--seed" in done.stderr and not (tmp_path / "o").exists()

    def test_repeated_scenario_runs_once(self, tmp_path: Path) -> None:
        """--scenario X --scenario X runs X once, and pass^k stays within 0..1."""
        done = simworld("run", *_scenario_args(FEW[0], FEW[0]), "--trials", "3", "--out", str(tmp_path / "o"))
        assert done.returncode == 0, done.stderr
        assert len(_lines(tmp_path / "o")) == 3
        assert set(_meta(tmp_path / "o")["pass_hat_k"].values()) == {1.0}

    def test_check_takes_a_seed_list(self) -> None:
        """simworld check reads the same seed lists as run."""
        done = simworld("check", "--seeds", "0,3", "--scenario", FEW[0])
        assert done.returncode == 0, done.stdout + done.stderr
        assert "seeds 0,3" in done.stdout


class TestNothingLost:
    def test_lines_are_written_as_the_run_goes(self, tmp_path: Path) -> None:
        """While episode N runs, the lines of episodes 1..N-1 are already whole on disk, and run.json says running."""
        (tmp_path / "peek.py").write_text(
            "import json, pathlib\nfrom simworld.agents import StepsAgent\n"
            "SEEN = []\n"
            "class Peek:\n"
            "    def act(self, obs):\n"
            "        out = pathlib.Path('o')\n"
            "        if obs.step == 0:\n"
            "            lines = (out / 'results.jsonl').read_bytes().splitlines()\n"
            "            status = json.loads((out / 'run.json').read_bytes())['status']\n"
            "            with open('seen.txt', 'a') as f:\n"
            "                f.write(f'{len(lines)} {status}\\n')\n"
            "        return None\n")
        done = simworld("run", "--agent", "python:peek:Peek", "--seeds", "0..3", *_scenario_args(FEW[0]),
                        "--out", "o", cwd=tmp_path)
        assert done.returncode == 1
        assert (tmp_path / "seen.txt").read_text().split("\n")[:-1] == [f"{n} running" for n in range(4)]
        assert _meta(tmp_path / "o")["status"] == "complete"

    def test_partial_line_skipped_by_readers_and_cut_by_writers(self, tmp_path: Path) -> None:
        """A trailing half line (a kill mid-write) is not a result; the next append starts on a clean line."""
        path = tmp_path / "results.jsonl"
        path.write_bytes(b'{"scenario":"a","seed":0,"trial":0}\n{"scenario":"b","se')
        assert [r["scenario"] for r in read_results(path)] == ["a"]
        with ResultsFile(path) as f:
            f.append(b'{"scenario":"c","seed":0,"trial":0}\n')
        assert path.read_bytes() == b'{"scenario":"a","seed":0,"trial":0}\n{"scenario":"c","seed":0,"trial":0}\n'

    def test_results_not_kept_in_memory_when_asked(self, tmp_path: Path) -> None:
        """keep_results=False keeps only counts in memory; the lines are on disk."""
        scenarios = load_suite(None, list(FEW))
        result = run_suite(scenarios, [0, 1], "reference", build_agent_factory("reference"), tmp_path / "o",
                           keep_results=False)
        assert result.results == () and result.episodes == 6 and result.passed == 6
        assert len(_lines(tmp_path / "o")) == 6

    def test_existing_run_refused(self, tmp_path: Path) -> None:
        """--out holding a run is refused (exit 2, one line, nothing touched) without --resume or --overwrite."""
        out = tmp_path / "o"
        assert simworld("run", *_scenario_args(FEW[0]), "--out", str(out)).returncode == 0
        before = (out / "results.jsonl").read_bytes(), (out / "run.json").read_bytes()
        done = simworld("run", *_scenario_args(FEW[1]), "--out", str(out))
        assert done.returncode == 2 and "--resume" in done.stderr and "--overwrite" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert ((out / "results.jsonl").read_bytes(), (out / "run.json").read_bytes()) == before

    def test_overwrite_leaves_no_stale_file(self, tmp_path: Path) -> None:
        """--overwrite replaces the old run: no old event file or result line survives into the new one."""
        out = tmp_path / "o"
        assert simworld("run", "--seeds", "0..1", *_scenario_args(FEW[0]), "--out", str(out)).returncode == 0
        done = simworld("run", *_scenario_args(FEW[1]), "--out", str(out), "--overwrite")
        assert done.returncode == 0, done.stderr
        assert [r["scenario"] for r in _lines(out)] == [FEW[1]]
        assert [p.name for p in (out / "events").iterdir()] == [f"{FEW[1]}__seed-0.jsonl"]


class TestResume:
    # Big enough (240 episodes) that a kill lands mid-run; the test checks that it did.
    ARGS = ("--seeds", "0..39", "--trials", "2", *_scenario_args(*FEW))
    TOTAL = 240

    @pytest.fixture(scope="class")
    @classmethod
    def whole(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        out = tmp_path_factory.mktemp("whole") / "o"
        done = simworld("run", *cls.ARGS, "--out", str(out))
        assert done.returncode == 0, done.stderr
        return out

    def _kill_after(self, out: Path, lines: int) -> int:
        """Start the run in a process, SIGKILL it once ``lines`` result lines are on disk; return the lines then."""
        proc = subprocess.Popen([sys.executable, "-m", "simworld", "run", *self.ARGS, "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        path = out / "results.jsonl"
        deadline = time.monotonic() + 120
        try:
            while lines and time.monotonic() < deadline and proc.poll() is None:
                if path.exists() and path.read_bytes().count(b"\n") >= lines:
                    break
                time.sleep(0.002)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        return path.read_bytes().count(b"\n") if path.exists() else 0

    @pytest.mark.parametrize("lines", [0, 1, 9, 60, 150])
    def test_kill_then_resume_equals_an_uninterrupted_run(self, tmp_path: Path, whole: Path, lines: int) -> None:
        """kill -9 at several points, then --resume: the same result lines and event files, byte for byte."""
        out = tmp_path / "o"
        on_disk = self._kill_after(out, lines)
        assert on_disk < self.TOTAL  # the kill landed before the end
        if on_disk:
            assert _meta(out)["status"] == "running"
            export = simworld("export", str(out), "--out", str(tmp_path / "x.jsonl"))
            assert export.returncode == 0 and "incomplete" in export.stderr
            assert (tmp_path / "x.jsonl").read_bytes().count(b"\n") == len(list(read_results(out / "results.jsonl")))
        done = simworld("run", *self.ARGS, "--out", str(out), "--resume")
        assert done.returncode == 0, done.stderr
        assert _meta(out)["status"] == "complete"
        _same_run(whole, out)

    def test_resume_refuses_other_arguments(self, tmp_path: Path, whole: Path) -> None:
        """--resume with another agent, other seeds or other trials is refused, naming what differs."""
        import shutil

        out = tmp_path / "o"
        shutil.copytree(whole, out)
        before = (out / "results.jsonl").read_bytes()
        for extra, word in ((("--agent", "noop"), "agent"), (("--seeds", "0..6"), "seeds"),
                            (("--trials", "3"), "trials")):
            args = list(self.ARGS)
            flag = extra[0]
            if flag in args:
                args[args.index(flag) + 1] = extra[1]
            else:
                args += list(extra)
            done = simworld("run", *args, "--out", str(out), "--resume")
            assert done.returncode == 2 and word in done.stderr, done.stderr
            assert len(done.stderr.strip().splitlines()) == 1
        assert (out / "results.jsonl").read_bytes() == before

    def test_resume_refuses_a_changed_suite(self, tmp_path: Path) -> None:
        """A scenario file edited between the run and --resume is refused (the results would mix two suites)."""
        suite = copy_suite(tmp_path, FEW[0])
        out = tmp_path / "o"
        assert simworld("run", "--suite", str(suite), "--out", str(out)).returncode == 0
        prompt = suite / FEW[0] / "prompt.md"
        prompt.write_text(prompt.read_text() + "\nThanks!\n")
        done = simworld("run", "--suite", str(suite), "--out", str(out), "--resume")
        assert done.returncode == 2 and "suite_digest" in done.stderr


class TestShards:
    def test_shards_merge_to_the_whole_run(self, tmp_path: Path) -> None:
        """Three shards, merged in any order, give the bytes of the unsharded run (results and events)."""
        args = ("--seeds", "0..3", "--trials", "2", *_scenario_args(*FEW))
        assert simworld("run", *args, "--out", str(tmp_path / "whole")).returncode == 0
        sizes = []
        for i in (1, 2, 3):
            done = simworld("run", *args, "--shard", f"{i}/3", "--out", str(tmp_path / f"s{i}"))
            assert done.returncode == 0, done.stderr
            sizes.append(len(_lines(tmp_path / f"s{i}")))
        assert sorted(sizes) == [8, 8, 8]
        done = simworld("merge", str(tmp_path / "m"), str(tmp_path / "s3"), str(tmp_path / "s1"), str(tmp_path / "s2"))
        assert done.returncode == 0, done.stderr
        _same_run(tmp_path / "whole", tmp_path / "m")
        merged, whole = _meta(tmp_path / "m"), _meta(tmp_path / "whole")
        assert merged["status"] == "complete" and merged["pass_hat_k"] == whole["pass_hat_k"]
        assert merged["tasks"] == whole["tasks"]

    def test_shards_are_disjoint_and_cover_the_grid(self) -> None:
        """Every job of the grid is in exactly one shard."""
        scenarios = load_suite(None, list(FEW))
        whole = [(s.id, seed, t) for s, seed, t in grid(scenarios, [0, 1, 2, 3, 4], "dev", 3)]
        parts = [[(s.id, seed, t) for s, seed, t in grid(scenarios, [0, 1, 2, 3, 4], "dev", 3, (i, 4))]
                 for i in range(1, 5)]
        assert sorted(x for p in parts for x in p) == sorted(whole) and len(whole) == sum(map(len, parts))

    def test_merge_refusals(self, tmp_path: Path) -> None:
        """A missing shard, a shard of another sweep, or an OUT that is a shard: one line each, exit 2."""
        args = ("--seeds", "0..1", *_scenario_args(FEW[0]))
        for i in (1, 2):
            assert simworld("run", *args, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}")).returncode == 0
        assert simworld("run", "--seeds", "0..2", *_scenario_args(FEW[0]), "--shard", "2/2",
                        "--out", str(tmp_path / "other")).returncode == 0
        for runs, word in (([tmp_path / "s1"], "missing 2/2"), ([tmp_path / "s1", tmp_path / "other"], "seeds"),
                           ([tmp_path / "s1", tmp_path / "s1"], "given twice")):
            done = simworld("merge", str(tmp_path / "m"), *map(str, runs))
            assert done.returncode == 2 and word in done.stderr, done.stderr
        done = simworld("merge", str(tmp_path / "s1"), str(tmp_path / "s1"), str(tmp_path / "s2"))
        assert done.returncode == 2 and "also one of the shards" in done.stderr

    def test_merge_refuses_a_truncated_shard(self, tmp_path: Path) -> None:
        """A shard whose last result line is cut off is refused, naming the shard and the line; resuming it fixes it."""
        args = ("--seeds", "0..3", *_scenario_args(FEW[0]))
        for i in (1, 2):
            assert simworld("run", *args, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}")).returncode == 0
        results = tmp_path / "s2" / "results.jsonl"
        whole = results.read_bytes()
        results.write_bytes(whole[:-40])  # the last line loses its end, as a copy cut short would
        done = simworld("merge", str(tmp_path / "m"), str(tmp_path / "s1"), str(tmp_path / "s2"))
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"shard 2/2 {str(tmp_path / 's2')!r} is incomplete: {results}:2 is cut off" in done.stderr
        assert "--resume" in done.stderr and not (tmp_path / "m").exists()
        resume = done.stderr.split("`simworld ")[1].split("`")[0].split()
        assert simworld(*resume).returncode == 0 and results.read_bytes() == whole
        assert simworld("merge", str(tmp_path / "m"), str(tmp_path / "s1"), str(tmp_path / "s2")).returncode == 0

    def test_merge_refuses_an_interrupted_shard(self, tmp_path: Path) -> None:
        """A shard that stopped between lines (run.json not complete, lines missing) is refused too."""
        args = ("--seeds", "0..3", *_scenario_args(FEW[0]))
        for i in (1, 2):
            assert simworld("run", *args, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}")).returncode == 0
        results = tmp_path / "s1" / "results.jsonl"
        results.write_bytes(results.read_bytes().splitlines(keepends=True)[0])
        meta = _meta(tmp_path / "s1")
        (tmp_path / "s1" / "run.json").write_bytes(orjson.dumps({**meta, "status": "interrupted"}))
        done = simworld("merge", str(tmp_path / "m"), str(tmp_path / "s1"), str(tmp_path / "s2"))
        assert done.returncode == 2 and "shard 1/2" in done.stderr and "status 'interrupted', 1 of 2" in done.stderr
        assert not (tmp_path / "m").exists()

    @pytest.mark.parametrize("shard", ["0/2", "3/2", "x", "1/0", "1-2"])
    def test_bad_shard(self, shard: str, tmp_path: Path) -> None:
        """--shard that is not I/N with 1 <= I <= N is one line, exit 2."""
        done = simworld("run", "--shard", shard, "--out", str(tmp_path / "o"))
        assert done.returncode == 2 and "--shard" in done.stderr and not (tmp_path / "o").exists()


HANG = '''
import socket, time

class Sleeper:
    def act(self, obs):
        time.sleep(10**6)

class Spinner:
    def act(self, obs):
        while True:
            pass

class Socket:
    def act(self, obs):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.create_connection(server.getsockname())
        client.recv(1)  # nobody ever sends

class SlowStart:
    def __init__(self):
        time.sleep(10**6)

    def act(self, obs):
        return None
'''


class TestTimeouts:
    @pytest.mark.parametrize("agent", ["Sleeper", "Spinner", "Socket", "SlowStart"])
    def test_hanging_python_agent_ends_at_its_timeout(self, tmp_path: Path, agent: str) -> None:
        """A python: agent that blocks is stopped at timeout_s, recorded as timeout, and the run goes on."""
        suite = copy_suite(tmp_path, FEW[0], FEW[1], budget={"max_steps": 30, "timeout_s": 1})
        (tmp_path / "hang.py").write_text(HANG)
        began = time.monotonic()
        done = simworld("run", "--suite", str(suite), "--agent", f"python:hang:{agent}", "--out", "o",
                        cwd=tmp_path, timeout=60)
        elapsed = time.monotonic() - began
        assert done.returncode == 1, done.stderr
        lines = _lines(tmp_path / "o")
        assert [r["stop_reason"] for r in lines] == ["timeout", "timeout"]
        assert all("timeout" in r["error"] and r["harness_error"] is None for r in lines)
        assert elapsed < 30  # two 1 s timeouts, with a wide margin for a loaded machine


GRADERS = '''
from simworld.verdict import Check, Verdict

def boom(episode):
    if episode.scenario == "waive-small-fee":
        raise RuntimeError("grader bug")
    return Verdict.from_checks([Check("fine", True, "")])
'''


class TestHarnessErrors:
    def test_grader_exception_is_a_harness_error_and_the_run_goes_on(self, tmp_path: Path) -> None:
        """A grader that raises marks its episode harness_error (with the traceback); other episodes run; exit 3."""
        (tmp_path / "boom_graders.py").write_text(GRADERS)
        suite = copy_suite(tmp_path, FEW[0], FEW[1], hooks={"pre_grade": ["boom_graders:boom"]})
        done = simworld("run", "--suite", str(suite), "--seeds", "0..1", "--out", "o", cwd=tmp_path)
        assert done.returncode == 3, done.stdout + done.stderr
        lines = _lines(tmp_path / "o")
        assert len(lines) == 4
        broken = [r for r in lines if r["harness_error"]]
        assert {r["scenario"] for r in broken} == {FEW[0]} and len(broken) == 2
        assert all("RuntimeError: grader bug" in r["harness_error"] and "Traceback" in r["harness_error"]
                   and not r["passed"] for r in broken)
        assert all(r["passed"] for r in lines if r["scenario"] == FEW[1])
        assert "HARNESS ERROR" in done.stdout
        assert (tmp_path / "o" / "events" / f"{FEW[0]}__seed-0.jsonl").exists()

    def test_broken_ground_truth_is_a_harness_error(self, tmp_path: Path) -> None:
        """A solution that does not play at a seed fails that episode as harness_error, not the whole run."""
        suite = copy_suite(tmp_path, FEW[0], FEW[1])
        (suite / FEW[0] / "solution.jsonl").write_text('{"tool": "waive_fee", "args": {"fee_id": "fee_nope"}}\n'
                                                        '{"tool": "finish", "args": {"summary": "x"}}\n')
        done = simworld("run", "--suite", str(suite), "--out", "o", cwd=tmp_path)
        assert done.returncode == 3, done.stderr
        lines = {r["scenario"]: r for r in _lines(tmp_path / "o")}
        assert "does not play" in lines[FEW[0]]["harness_error"] and not lines[FEW[0]]["passed"]
        assert lines[FEW[1]]["passed"] and lines[FEW[1]]["harness_error"] is None

    def test_tool_exception_is_a_harness_error_with_the_episode_kept(self, tmp_path: Path, monkeypatch) -> None:
        """A tool that raises an unexpected exception ends the episode as harness_error; its calls so far are kept."""
        from simworld import tools

        real = tools.TOOLS["waive_fee"]
        monkeypatch.setitem(tools.TOOLS, "waive_fee", attrs.evolve(real, fn=_exploding_tool))
        scenarios = load_suite(None, [FEW[0], FEW[1]])
        result = run_suite(scenarios, [0], "reference", build_agent_factory("reference"), tmp_path / "o")
        first, second = result.results
        assert first["stop_reason"] == "harness_error" and "ZeroDivisionError" in first["harness_error"]
        assert first["counters"]["tool_calls"] >= 1 and second["passed"]
        assert result.harness_errors >= 1


def _exploding_tool(world, **kwargs):
    return 1 / 0


class TestExitCodesAndProgress:
    def test_fail_under(self, tmp_path: Path) -> None:
        """--fail-under X exits 1 when the mean score is below X, 0 when it is met; out of range is exit 2."""
        ok = simworld("run", *_scenario_args(FEW[0]), "--fail-under", "1.0", "--out", str(tmp_path / "a"))
        assert ok.returncode == 0, ok.stderr
        assert simworld("run", *_scenario_args(FEW[0]), "--fail-under", "2", "--out",
                        str(tmp_path / "b")).returncode == 2

    def test_exit_codes_in_help(self) -> None:
        """simworld run --help documents the exit statuses."""
        done = simworld("run", "--help")
        assert "3 a harness error" in " ".join(done.stdout.split())

    def test_plain_progress_lines_off_a_terminal(self, tmp_path: Path) -> None:
        """With stderr not a terminal, progress is a plain line (done/total, passed, rate) at a set interval."""
        env = {**os.environ, "SIMWORLD_PROGRESS_EVERY": "0"}
        done = subprocess.run([sys.executable, "-m", "simworld", "run", "--seeds", "0..2", *_scenario_args(FEW[0]),
                               "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0
        progress = [x for x in done.stderr.splitlines() if x.startswith("progress: ")]
        assert progress and "/3 episodes" in progress[-1] and "passed" in progress[-1]


class TestCollector:
    def test_a_run_gives_back_what_it_froze(self, tmp_path: Path) -> None:
        """During a run what was loaded before it is frozen out of the collector's sight; after it nothing is left
        frozen, and objects frozen by someone else before the run stay frozen."""
        import gc

        seen = []
        factory = build_agent_factory("noop")

        def agent(scenario, seed, variables):
            seen.append(gc.get_freeze_count())
            return factory(scenario, seed, variables)

        suite = [s for s in load_suite() if s.id == FEW[0]]
        run_suite(suite, [0], "noop", agent, tmp_path / "a")
        assert seen and seen[0] > 0 and gc.get_freeze_count() == 0
        gc.freeze()
        try:
            run_suite(suite, [0], "noop", agent, tmp_path / "b")
            assert gc.get_freeze_count() > 0  # (fewer: frozen objects freed meanwhile leave the count)
        finally:
            gc.unfreeze()


def test_api_refuses_resume_and_overwrite_together(tmp_path: Path) -> None:
    """run_suite(resume=True, overwrite=True) is a contradiction, refused before anything is written."""
    with pytest.raises(RunDirError):
        run_suite(load_suite(None, [FEW[0]]), [0], "reference", build_agent_factory("reference"), tmp_path / "o",
                  resume=True, overwrite=True)
    assert not (tmp_path / "o").exists()


def test_readme_documents_runs() -> None:
    """The docs show sweeps, resume, shards, merge, the exit codes and the action limits as the code has them."""
    from simworld import actions

    readme = " ".join(docs_text().split())
    for text in ("--seeds 0..49", "--resume", "--shard 1/4", "simworld merge", "--fail-under", "harness_error",
                 f"nesting {actions.MAX_DEPTH} levels", f"{actions.MAX_NODES:,} values",
                 f"a string {actions.MAX_STRING_CHARS:,} characters", f"{actions.MAX_TEXT_CHARS:,} characters of text",
                 f"an integer or decimal {actions.MAX_INT_DIGITS} digits"):
        assert text in readme, text


class TestSecrets:
    def test_no_secret_in_any_file_a_run_writes(self, tmp_path: Path) -> None:
        """A key in the environment or in --base-url credentials appears in no file of the run (nor its output)."""
        env = {**os.environ, "OPENAI_API_KEY": "sk-KEYMARKER123"}
        done = subprocess.run([sys.executable, "-m", "simworld", "run", "--scenario", FEW[0], "--agent", "openai:m",
                               "--base-url", "http://user:URLMARKER456@127.0.0.1:9/v1", "--out", str(tmp_path / "o")],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 1, done.stderr
        files = [p for p in (tmp_path / "o").rglob("*") if p.is_file()]
        assert len(files) >= 3
        for path in files:
            data = path.read_bytes()
            assert b"MARKER" not in data, path
        assert "MARKER" not in done.stdout + done.stderr
        assert _meta(tmp_path / "o")["settings"] == {"base_url": "http://***@127.0.0.1:9/v1"}


class TestHeldStarts:
    """A run holds the starts and solution end states of its episodes in flight, no more, and gives the bounds back."""

    @pytest.mark.parametrize(("concurrency", "bound"), [(1, 1), (3, 12)])
    def test_held_while_the_run_plays_and_given_back_after(self, tmp_path: Path, concurrency: int,
                                                           bound: int) -> None:
        from simworld._episode import endstates
        from simworld._scenario import scenario as scenario_module

        suite = load_suite()[:6]
        seen: list[tuple[int, int, int, int]] = []
        inner = build_agent_factory("random")

        def factory(scenario, seed, variables):
            seen.append((len(scenario_module._INSTANCES), scenario_module._INSTANCES.size,
                         len(endstates._held), endstates._held.size))
            return inner(scenario, seed, variables)

        before = (scenario_module._INSTANCES.size, endstates._held.size)
        result = run_suite(suite, [0, 1, 2], "random", factory, tmp_path / "run", concurrency=concurrency)
        assert result.episodes == 18 and result.harness_errors == 0 and len(seen) >= 18
        assert {(size, ends) for _, size, _, ends in seen} == {(bound, bound)}
        assert max(held for held, _, _, _ in seen) <= bound and max(e for _, _, e, _ in seen) <= bound
        assert before == (scenario_module._INSTANCES.size, endstates._held.size)

    def test_a_held_value_is_kept_once_and_only_while_it_stands(self) -> None:
        """Held.keep gives back a valid value another thread kept first, and replaces one that no longer stands;
        Held.get reads a value only while it stands, and marks it the most recently used."""
        from simworld._world.held import Held

        held: Held[tuple[str, int]] = Held(2)
        fresh = lambda value: value[0] == "now"  # noqa: E731
        assert held.keep("a", ("now", 1), fresh) == ("now", 1)
        assert held.keep("a", ("now", 2), fresh) == ("now", 1)
        held.keep("b", ("old", 3), fresh)
        assert held.get("b", fresh) is None and held.keep("b", ("now", 4), fresh) == ("now", 4)
        assert held.get("a", fresh) == ("now", 1) and list(held) == ["b", "a"]
        held.keep("c", ("now", 5), fresh)
        assert list(held) == ["a", "c"] and held.bound(0) == 2 and list(held) == ["c"] and held.size == 1

    def test_a_lower_bound_lets_the_oldest_go(self) -> None:
        from simworld._scenario.scenario import _INSTANCES, hold_starts

        scenario = load_suite()[0]
        before = hold_starts(3)
        try:
            for seed in range(6):
                scenario.instance(seed)
            assert len(_INSTANCES) == 3
            hold_starts(1)
            assert list(_INSTANCES) == [(id(scenario), 5)]
        finally:
            hold_starts(before)


@pytest.mark.parametrize("agent", ["reference", "random"])
def test_a_graded_episode_leaves_no_reference_cycle(tmp_path: Path, agent: str) -> None:
    """What an episode made is freed when its last reference goes, not left to the cycle collector: a graded
    episode (its states, events, and what the graders built of it) is freed at once, while still in the caches."""
    import gc

    suite = load_suite()
    factory = build_agent_factory(agent)
    run_suite(suite, [3], agent, factory, tmp_path / "warm")  # what a process makes once (caches) made first
    gc.collect()
    gc.disable()
    try:
        result = run_suite(suite, [4, 5], agent, factory, tmp_path / "run")
        assert result.episodes == 2 * len(suite)
        assert gc.collect() == 0
    finally:
        gc.enable()
