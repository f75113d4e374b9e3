"""The scenario library around the scenarios: holdout seeds, `simworld show`, the generated large world."""

from __future__ import annotations

import calendar
from datetime import date, timedelta
from pathlib import Path

import pytest
from helpers import simworld

from simworld._scenario.scenario import bundled_root, load_suite
from simworld._world.generate import generate
from simworld._world.snapshot import SnapshotLoader
from simworld._world.splits import HOLDOUT_BASE, effective_seed
from simworld.errors import ScenarioError

ROOT = Path(__file__).resolve().parent.parent



class TestSplits:
    def test_dev_uses_the_seed_and_refuses_holdout_seeds(self) -> None:
        """The dev split runs the seed as given and refuses a seed in the holdout range."""
        assert effective_seed("x", 41, "dev") == 41
        with pytest.raises(ScenarioError, match="reserved for the holdout split"):
            effective_seed("x", HOLDOUT_BASE, "dev")

    def test_holdout_seeds_are_reserved_per_scenario(self) -> None:
        """Holdout seeds lie in the reserved range, differ between scenarios, and are stable."""
        ids = [s.id for s in load_suite()]
        seeds = {i: [effective_seed(i, n, "holdout") for n in range(20)] for i in ids}
        for i in ids:
            assert all(s >= HOLDOUT_BASE for s in seeds[i])
            assert len(set(seeds[i])) == 20
            assert seeds[i] == [effective_seed(i, n, "holdout") for n in range(20)]
        assert len({seeds[i][0] for i in ids}) == len(ids)

    def test_unknown_split(self) -> None:
        """An unknown split names the ones there are."""
        with pytest.raises(ScenarioError, match="dev, holdout"):
            effective_seed("x", 1, "test")

    def test_cli_holdout_run(self, tmp_path: Path) -> None:
        """`simworld run --split holdout` runs each scenario at its reserved seed, never a dev one."""
        done = simworld("run", "--split", "holdout", "--seed", "3", "--scenario", "waive-small-fee",
                        "--out", str(tmp_path))
        assert done.returncode == 0, done.stdout + done.stderr
        import orjson

        (line,) = (tmp_path / "results.jsonl").read_bytes().splitlines()
        assert orjson.loads(line)["seed"] == effective_seed("waive-small-fee", 3, "holdout")
        assert orjson.loads((tmp_path / "run.json").read_bytes())["split"] == "holdout"


class TestShow:
    def test_show_prints_what_the_agent_sees_and_the_world(self) -> None:
        """`simworld show` prints the rendered request, the policy text, the tools and the target's records."""
        done = simworld("show", "waive-large-fee-escalate", "--seed", "2")
        assert done.returncode == 0, done.stderr
        for part in ("## Request", "## Policy", "## Tools", "## World", "fee_006", "escalate [terminal]",
                     "Olu Adeyemi", "seq  due"):
            assert part in done.stdout
        assert "{" not in done.stdout.split("## Request")[1].split("## Policy")[0]

    def test_show_unknown_scenario(self) -> None:
        """An unknown scenario is one error line listing what exists."""
        done = simworld("show", "nope")
        assert done.returncode == 2 and "nope" in done.stderr and "waive-small-fee" in done.stderr


class TestLargeWorld:
    def test_generate_is_deterministic_and_keeps_the_base(self) -> None:
        """The same seed writes the same bytes; the base's records are all there; the size is about 2 MB."""
        small = SnapshotLoader().load(bundled_root() / "snapshots" / "small.json")
        a, b = generate(small, 500, 1), generate(small, 500, 1)
        assert a == b and a != generate(small, 500, 2)
        assert 1_500_000 < len(a) < 3_000_000
        assert a == (ROOT / "snapshots" / "large.json").read_bytes(), \
            "snapshots/large.json is stale: run simworld generate --customers 500 --seed 1 --out snapshots/large.json"

    def test_every_generated_term_is_a_full_year(self) -> None:
        """Regression: terms starting on the 29th to 31st ended 1 to 3 days short; each runs to its anniversary."""
        large = SnapshotLoader().load(bundled_root() / "snapshots" / "large.json")
        policies = list(large.base.tables["policies"].values())
        late_starts = [p for p in policies if p.term_start.day > 28]
        assert late_starts  # the generator does start terms on the 29th, 30th and 31st
        for policy in policies:
            days = (policy.term_end - policy.term_start).days + 1
            assert days == (366 if calendar.isleap(policy.term_start.year + (policy.term_start.month > 2)) else 365), \
                policy.id
            assert policy.term_end + timedelta(days=1) == date(policy.term_start.year + 1, policy.term_start.month,
                                                                policy.term_start.day), policy.id

    def test_large_world_is_bigger_and_loads(self) -> None:
        """The large snapshot holds the small one's records plus hundreds of customers."""
        loader = SnapshotLoader()
        small = loader.load(bundled_root() / "snapshots" / "small.json")
        large = loader.load(bundled_root() / "snapshots" / "large.json")
        assert len(large.base.tables["customers"]) == len(small.base.tables["customers"]) + 500
        for rid in small.base.tables["plans"]:
            assert large.base.tables["plans"][rid] == small.base.tables["plans"][rid]

    def test_suite_runs_on_the_large_world(self, tmp_path: Path) -> None:
        """`simworld run --snapshot large` passes the reference agent on every scenario."""
        done = simworld("run", "--snapshot", "large", "--seed", "9", "--out", str(tmp_path))
        assert done.returncode == 0, done.stdout + done.stderr

    def test_unknown_snapshot(self) -> None:
        """--snapshot naming no file is one clear error."""
        done = simworld("run", "--snapshot", "huge")
        assert done.returncode == 2 and "huge" in done.stderr
