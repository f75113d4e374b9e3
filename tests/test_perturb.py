"""simworld.perturb: a world is a seed or its parameters, and both spell the same world; `simworld run --world`."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest
from helpers import simworld

from simworld import make
from simworld._scenario.scenario import load_suite
from simworld._world.perturb import RandomDraws, WorldDraws, read_world_file, world_file_bytes, world_id
from simworld.errors import ScenarioError

SUITE = {s.id: s for s in load_suite()}
SPLIT = SUITE["split-balance-three-ways"]
PREMIUM = SUITE["premium-increase-midterm"]
PLAIN = {"year_shift": 0, "anchor_day": 1, "currency": "USD", "jitter": 0, "extra_units": 0}


class TestSeedAndParameters:
    @pytest.mark.parametrize("scenario", sorted(SUITE))
    def test_a_seeds_parameters_give_the_seeds_world(self, scenario: str) -> None:
        """Every scenario: the parameters a seed drew, pinned, give the same state, clock and variables."""
        sc = SUITE[scenario]
        for seed in range(25):
            inst = sc.instance(seed)
            again = sc.at_world(inst.world).instance(12345)
            assert (again.state.hash, again.clock, again.vars, again.world) \
                == (inst.state.hash, inst.clock, inst.vars, inst.world)

    def test_parameters_are_recorded_in_draw_order(self) -> None:
        """A world names every parameter its scenario varies, in draw order, params nested by name."""
        assert list(SPLIT.instance(0).world) == ["year_shift", "anchor_day", "currency", "jitter", "extra_units"]
        world = PREMIUM.instance(0).world
        assert list(world) == ["year_shift", "anchor_day", "currency", "jitter", "extra_units", "params"]
        assert list(world["params"]) == ["increase"]  # new_premium is a sum: derived, not drawn

    def test_random_draws_are_the_seeded_generator(self) -> None:
        """RandomDraws makes exactly the seeded generator's calls: the same seed, the same world as ever."""
        a = SPLIT.perturbed(RandomDraws(random.Random(f"{SPLIT.id}/3")))
        assert a.state.hash == SPLIT.instance(3).state.hash

    def test_the_plain_world(self) -> None:
        """USD, year 0, anchor 1, no jitter: the snapshot's own plan, in its own currency and amounts."""
        inst = SPLIT.at_world(PLAIN).instance(0)
        assert inst.vars["currency"] == "USD" and inst.vars["annual_premium"] == "1500.00"
        assert inst.vars["term_start"] == "2026-01-01" and inst.vars["anchor_day"] == 1


class TestBadParameters:
    @pytest.mark.parametrize("change, message", [
        ({"currency": "JPY"}, r"world.currency='JPY' is not one this scenario allows; expected one of \['USD'"),
        ({"anchor_day": True}, r"world.anchor_day=True is not one"),
        ({"jitter": 1001}, r"world.jitter=1001 is out of range; expected an integer from -1000 to 1000"),
        ({"jitter": "0"}, r"world.jitter='0' is out of range"),
        ({"colour": "red"}, r"unknown parameter\(s\) \['colour'\]; this scenario draws: year_shift, anchor_day"),
        ({"params": {"wanted": "EUR"}}, r"unknown parameter\(s\) \['params.wanted'\]"),
    ])
    def test_refused_naming_the_parameter(self, change: dict[str, object], message: str) -> None:
        """A value the scenario does not allow, or a parameter it does not draw, is a ScenarioError naming it."""
        with pytest.raises(ScenarioError, match=message):
            SPLIT.at_world({**PLAIN, **change})

    def test_missing_parameter(self) -> None:
        """Every parameter the scenario draws must be given."""
        with pytest.raises(ScenarioError, match="world lacks 'extra_units'"):
            SPLIT.at_world({k: v for k, v in PLAIN.items() if k != "extra_units"})

    @pytest.mark.parametrize("amount, message", [("100.00", "out of range"), ("150.001", "not an amount in USD"),
                                                 (150, r"type=int")])
    def test_money_params(self, amount: object, message: str) -> None:
        """A money param is a decimal string in the world's currency, within the scenario's range."""
        with pytest.raises(ScenarioError, match=message):
            PREMIUM.at_world({**PLAIN, "params": {"increase": amount}})

    def test_world_draws_need_an_object(self) -> None:
        """The parameters are a JSON object."""
        with pytest.raises(ScenarioError, match="JSON object of parameters"):
            WorldDraws([1, 2])  # type: ignore[arg-type]


class TestWorldSeed:
    def test_the_seed_it_came_from(self) -> None:
        """A pinned world reports the seed it came from when that seed gives exactly it, else a stable id."""
        world = SPLIT.instance(21).world
        assert SPLIT.at_world(world).world_seed(21) == 21
        assert SPLIT.at_world(world).world_seed(22) == world_id(SPLIT.id, world) == SPLIT.at_world(world).world_seed()

    def test_make_takes_a_world(self) -> None:
        """simworld.make(scenario, world=...) is an Environment at those parameters."""
        env = make("split-balance-three-ways", world=PLAIN)
        env.reset()
        assert env.seed == world_id(SPLIT.id, PLAIN) and env.variables["annual_premium"] == "1500.00"
        assert make("split-balance-three-ways", seed=4, world=SPLIT.instance(4).world).seed == 4


def _world_file(tmp_path: Path, data: object, name: str = "w.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else orjson.dumps(data))
    return path


class TestRunWorld:
    def test_runs_the_world_and_says_which(self, tmp_path: Path) -> None:
        """run --world runs the file's scenario at its parameters: the line's seed is derived from them and its
        world field holds them; run.json records them; a second run is byte-identical."""
        path = tmp_path / "w.json"
        path.write_bytes(world_file_bytes(SPLIT.id, PLAIN))
        for out in ("a", "b"):
            done = simworld("run", "--world", "w.json", "--out", out, cwd=tmp_path)
            assert done.returncode == 0, done.stdout + done.stderr
        (line,) = [orjson.loads(x) for x in (tmp_path / "a" / "results.jsonl").read_bytes().splitlines()]
        assert line["scenario"] == SPLIT.id and line["world"] == PLAIN and line["seed"] == world_id(SPLIT.id, PLAIN)
        assert orjson.loads((tmp_path / "a" / "run.json").read_bytes())["settings"] == {"world": PLAIN}
        assert (tmp_path / "a" / "results.jsonl").read_bytes() == (tmp_path / "b" / "results.jsonl").read_bytes()
        (event,) = (tmp_path / "a" / "events").iterdir()
        assert event.read_bytes() == (tmp_path / "b" / "events" / event.name).read_bytes()
        assert f"world w.json (seed {line['seed']})" in done.stdout

    def test_a_seeds_world_reports_the_seed_and_matches_the_seed_run(self, tmp_path: Path) -> None:
        """A world file from seed 7 reports seed 7 and gives the same result line as --seed 7, plus its world."""
        world = SPLIT.instance(7).world
        _world_file(tmp_path, {"scenario": SPLIT.id, "seed": 7, "world": world})
        assert simworld("run", "--world", "w.json", "--out", "a", cwd=tmp_path).returncode == 0
        assert simworld("run", "--scenario", SPLIT.id, "--seed", "7", "--out", "b", cwd=tmp_path).returncode == 0
        (a,) = [orjson.loads(x) for x in (tmp_path / "a" / "results.jsonl").read_bytes().splitlines()]
        (b,) = [orjson.loads(x) for x in (tmp_path / "b" / "results.jsonl").read_bytes().splitlines()]
        assert a.pop("world") == world and a == b

    @pytest.mark.parametrize("content, message", [
        (b"not json", "not valid JSON"),
        (b"[1]", "expected a JSON object"),
        (b'{"scenario": "split-balance-three-ways"}', 'expected "world" as an object'),
        (b'{"scenario": "split-balance-three-ways", "world": {}, "agent": "x"}', r"unknown key\(s\) \['agent'\]"),
        (b'{"scenario": "nope", "world": {}}', r"Unknown scenario\(s\) \['nope'\]"),
        (b'{"scenario": "split-balance-three-ways", "world": {}, "seed": -1}', 'expected "seed" as a seed >= 0'),
        (orjson.dumps({"scenario": "split-balance-three-ways", "world": {**PLAIN, "currency": "KWD"}}),
         "world.currency='KWD' is not one this scenario allows"),
        (orjson.dumps({"scenario": "split-balance-three-ways", "world": {**PLAIN, "jitter": 2000}}),
         "world.jitter=2000 is out of range"),
    ])
    def test_malformed_file_is_one_line_exit_2(self, tmp_path: Path, content: bytes, message: str) -> None:
        """A malformed world file is one error line naming the file and the problem; exit 2; nothing written."""
        _world_file(tmp_path, content)
        done = simworld("run", "--world", "w.json", "--out", "o", cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == ""
        (err,) = done.stderr.splitlines()
        assert err.startswith("simworld: error: w.json: ")
        import re

        assert re.search(message, err), err
        assert not (tmp_path / "o").exists()

    def test_missing_file(self, tmp_path: Path) -> None:
        """A world file that is not there is one line naming it."""
        done = simworld("run", "--world", "gone.json", cwd=tmp_path)
        assert done.returncode == 2 and "gone.json: cannot read this world file" in done.stderr

    @pytest.mark.parametrize("extra", [("--seed", "3"), ("--seeds", "0..2"), ("--scenario", "waive-small-fee"),
                                       ("--split", "holdout")])
    def test_exclusive_with_seeds_and_scenarios(self, tmp_path: Path, extra: tuple[str, str]) -> None:
        """--world pins the world and names the scenario: --seed, --seeds, --scenario and --split are refused."""
        _world_file(tmp_path, {"scenario": SPLIT.id, "world": PLAIN})
        done = simworld("run", "--world", "w.json", *extra, cwd=tmp_path)
        assert done.returncode == 2 and extra[0] in done.stderr and len(done.stderr.splitlines()) == 1

    def test_resume_refuses_another_world(self, tmp_path: Path) -> None:
        """Resuming a --world run with another world is refused: the world is part of the run's identity."""
        _world_file(tmp_path, {"scenario": SPLIT.id, "world": PLAIN})
        _world_file(tmp_path, {"scenario": SPLIT.id, "world": {**PLAIN, "jitter": 1}}, "v.json")
        assert simworld("run", "--world", "w.json", "--out", "o", cwd=tmp_path).returncode == 0
        done = simworld("run", "--world", "v.json", "--out", "o", "--resume", cwd=tmp_path)
        assert done.returncode == 2 and "--resume" in done.stderr
        again = simworld("run", "--world", "w.json", "--out", "o", "--resume", cwd=tmp_path)
        assert again.returncode == 0, again.stderr


def test_read_world_file_round_trips(tmp_path: Path) -> None:
    """world_file_bytes writes what read_world_file reads back."""
    path = tmp_path / "w.json"
    path.write_bytes(world_file_bytes(SPLIT.id, PLAIN, seed=4))
    spec = read_world_file(path)
    assert (spec.scenario, spec.world, spec.seed) == (SPLIT.id, PLAIN, 4)


class TestStartRecords:
    @pytest.mark.parametrize("scenario", sorted(SUITE))
    def test_remade_records_keep_every_other_field(self, scenario: str) -> None:
        """Every record a start remakes is in the world's currency and keeps every field the perturbation does not
        move, the snapshot's own values."""
        import attrs

        moved = {"currency", "annual_premium", "term_start", "term_end", "anchor_day", "instalments", "amount",
                 "waived_on", "charged_on", "allocations", "received_on"}
        sc = SUITE[scenario]
        inst = sc.instance(7)
        base = sc.snapshot.state()
        for (table, rid), record in inst.state.overlay.items():
            old = base.get(table, rid)
            assert type(record) is type(old) and record.currency == inst.world["currency"]
            kept = [f.name for f in attrs.fields(type(old)) if f.name not in moved]
            assert kept and [getattr(record, n) for n in kept] == [getattr(old, n) for n in kept]

    def test_dates_are_real_dates_under_a_time_guard(self) -> None:
        """A start made while freezegun runs holds real dates (not FakeDates), the same values as without it."""
        import datetime as dt

        from simworld._world.clock import TimeGuard

        expected = SPLIT.perturbed(RandomDraws(random.Random(f"{SPLIT.id}/11")))
        with TimeGuard():
            guarded = SPLIT.perturbed(RandomDraws(random.Random(f"{SPLIT.id}/11")))
        real_date = dt.date
        for key, record in guarded.state.overlay.items():
            days = [v for v in vars(record).values() if isinstance(v, real_date)]
            days += [d for i in getattr(record, "instalments", ()) for d in (i.due_date, i.draft_date)]
            assert days and all(type(d) is real_date for d in days), key
            assert record == expected.state.overlay[key]
        assert guarded.state.hash == expected.state.hash
