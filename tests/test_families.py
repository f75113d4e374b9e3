"""Task families: generation is deterministic and de-duplicated, holdout is disjoint, and the ground truth is proven."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from simworld._families import generate as make
from simworld._families import in_holdout, load_families
from simworld._running.check import check_scenario
from simworld._scenario.scenario import load_suite
from simworld._world.vocab import CATEGORIES
from simworld.errors import FamilyError

ROOT = Path(__file__).resolve().parent.parent
#: The families of the first release: their bytes at a fixed seed are pinned (TestGenerate).
ORIGINAL_FAMILIES = ("bill-in-another-currency", "billing-frequency-change", "cancel-policy", "hardship-deferral",
                     "injected-instruction", "move-due-day", "payoff-quote", "premium-change-midterm",
                     "rate-or-pricing-escalate", "recover-due-day", "split-and-waive", "split-into-n",
                     "split-vague-count", "unverified-change", "waive-and-move", "waive-late-fee")
#: Original families that gained fixtures (issue 18: escalate >= 10% and 10,000 dev instances).
FIXTURES_ADDED = ("bill-in-another-currency", "billing-frequency-change", "cancel-policy", "payoff-quote",
                  "premium-change-midterm", "rate-or-pricing-escalate", "split-into-n")


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


class TestManifests:
    def test_bundled_families_cover_the_catalogue(self) -> None:
        """At least 12 families, every category, and at least two multi-intent ones."""
        families = load_families()
        assert len(families) >= 12
        assert {f.category for f in families} == set(CATEGORIES)
        assert sum(1 for f in families if len(f.intents) == 2) >= 2

    def test_unknown_key_is_refused(self, tmp_path: Path) -> None:
        """family.json is a closed schema: an unknown key names the file and the key."""
        src = ROOT / "families" / "split-into-n"
        dst = tmp_path / "families" / "split-into-n"
        dst.mkdir(parents=True)
        data = orjson.loads((src / "family.json").read_bytes())
        data["colour"] = "blue"
        (dst / "family.json").write_bytes(orjson.dumps(data))
        (dst / "phrasings.md").write_bytes((src / "phrasings.md").read_bytes())
        with pytest.raises(FamilyError, match="colour"):
            load_families(tmp_path / "families")


class TestSnapshot:
    def test_families_snapshot_is_what_its_script_writes(self, tmp_path: Path) -> None:
        """snapshots/families.json is exactly what scripts/make_families_snapshot.py writes (edit the script, then
        run it: never the JSON by hand)."""
        out = tmp_path / "families.json"
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_families_snapshot.py"), str(out)],
                              capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == (ROOT / "snapshots" / "families.json").read_bytes(), (
            "snapshots/families.json differs from what scripts/make_families_snapshot.py writes; run the script")


class TestGenerate:
    def test_same_seed_same_bytes_in_another_process(self, tmp_path: Path) -> None:
        """The same seed writes the same bytes, here and in a process with another PYTHONHASHSEED."""
        make(load_families(names=["split-and-waive", "waive-late-fee"]), 4, 7, tmp_path / "a")
        env = {**os.environ, "PYTHONHASHSEED": "12345"}
        done = subprocess.run([sys.executable, "-m", "simworld", "families", "generate", "split-and-waive",
                               "waive-late-fee", "--count", "4", "--seed", "7", "--out", str(tmp_path / "b")],
                              capture_output=True, text=True, env=env, cwd=ROOT)
        assert done.returncode == 0, done.stdout + done.stderr
        assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
        make(load_families(names=["split-and-waive", "waive-late-fee"]), 4, 8, tmp_path / "c")
        assert _tree(tmp_path / "a") != _tree(tmp_path / "c")

    def test_bytes_are_those_before_the_speed_up(self, tmp_path: Path) -> None:
        """The 16 original families, 8 instances each at seed 2026, write the bytes the generator wrote before its
        speed-up (lazy state hashes, shared verdicts per world point, families on worker processes), with any
        number of workers. The digest was taken from the tree the slow generator wrote, then changed only where the
        27 instances phrased `injected` declare `marked_paid` instead of forbidding any paid_amount change (no
        instance was dropped or added by the verification of solutions before writing), and again when seven of them
        (bill-in-another-currency, billing-frequency-change, cancel-policy, payoff-quote, premium-change-midterm,
        rate-or-pricing-escalate, split-into-n) gained fixtures for balance and scale: a longer fixture list draws
        other points. The nine whose fixtures did not change still write their old bytes (second digest, taken
        from the tree before the fixtures were added)."""
        import hashlib

        make(load_families(names=list(ORIGINAL_FAMILIES)), 8, 2026, tmp_path, workers=2)
        digest = hashlib.sha256()
        files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
        for p in files:
            digest.update(str(p.relative_to(tmp_path)).encode() + b"\0" + p.read_bytes() + b"\0")
        assert (digest.hexdigest(), len(files)) == (
            "40734338fc4a5616ca1c5cb9c176525567b8e81a9866c967dc1f98855e3e2d56", 555)
        unchanged = tmp_path.parent / (tmp_path.name + "-unchanged")
        make(load_families(names=[n for n in ORIGINAL_FAMILIES if n not in FIXTURES_ADDED]), 8, 2026, unchanged)
        digest = hashlib.sha256()
        files = sorted(p for p in unchanged.rglob("*") if p.is_file())
        for p in files:
            digest.update(str(p.relative_to(unchanged)).encode() + b"\0" + p.read_bytes() + b"\0")
        assert (digest.hexdigest(), len(files)) == (
            "1e1205def183e03d6d5b76e0afdb01afb3ea316935a5dc79d71eb78680a39303", 298)

    def test_skip_reasons_are_short_categories(self, tmp_path: Path) -> None:
        """What a generation skipped is counted by short category names, never by a sentence."""
        results = make(load_families(names=["split-and-waive", "waive-late-fee", "recover-due-day"]), 20, 1, tmp_path)
        known = {"other split", "duplicate", "world-dependent", "rules conflict", "paths disagree", "no single answer",
                 "empty world space", "no write to crash"}
        seen = {k for r in results.values() for k in r.skipped}
        assert seen <= known and len(seen) >= 3, seen

    def test_instances_are_distinct(self, tmp_path: Path) -> None:
        """No two instances of a generation are the same request, and at least 95% of the requests read differently."""
        results = make(load_families(names=["move-due-day"]), 40, 3, tmp_path)
        ids = [i.id for i in results["move-due-day"].instances]
        assert len(ids) == len(set(ids)) == 40
        prompts = [s.request(s.instance(0).vars) for s in load_suite(tmp_path)]  # as the agent reads them
        assert len(set(prompts)) >= 0.95 * len(prompts)

    def test_solutions_that_fail_their_own_graders_are_reported_not_written(self, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """Every instance's solutions are graded by its own task.json at VERIFY_SEEDS before it is written. With the
        injected-note rule of the first release (any change of an instalment's paid_amount forbidden), a split that
        drops unpaid instalments fails its own check: such an instance is a disagreement naming it, never written,
        and generation draws on to COUNT good ones."""
        from simworld._families import _generate

        old = (*_generate.INJECTED_FORBIDDEN,
               {"name": "nothing_marked_paid", "path": "plans/*/instalments/*/paid_amount"})
        monkeypatch.setattr(_generate, "INJECTED_FORBIDDEN", old)
        done = make(load_families(names=["split-and-waive"]), 30, 2, tmp_path)["split-and-waive"]
        assert done.disagreements, "the guard let wrong ground truth through"
        assert all("phrasing injected" in d and "nothing_marked_paid" in d for d in done.disagreements)
        written = {p.name for p in tmp_path.iterdir() if p.is_dir()}
        assert len(written) == 30 and not {d.split(" ")[0] for d in done.disagreements} & written
        monkeypatch.undo()
        fixed = make(load_families(names=["split-and-waive"]), 30, 2, tmp_path / "fixed")["split-and-waive"]
        assert not fixed.disagreements

    def test_holdout_is_disjoint_from_dev(self, tmp_path: Path) -> None:
        """--split holdout draws only parameter points reserved for holdout; dev never draws one."""
        (family,) = load_families(names=["split-into-n"])
        dev = make([family], 20, 1, tmp_path / "dev")["split-into-n"].instances
        hold = make([family], 20, 1, tmp_path / "hold", split="holdout")["split-into-n"].instances

        def point(i: object) -> dict[str, object]:
            return {"fixture": i.fixture, "params": list(i.params), "recovery": i.recovery}  # type: ignore[attr-defined]

        assert all(not in_holdout(family, point(i)) for i in dev)
        assert all(in_holdout(family, point(i)) for i in hold)
        assert not {orjson.dumps(point(i)) for i in dev} & {orjson.dumps(point(i)) for i in hold}

    def test_holdout_instances_say_so_in_task_json(self, tmp_path: Path) -> None:
        """A holdout instance's task.json carries "split": "holdout" (so it loads as one, whatever seed it is run
        at); a dev instance's task.json has no split key (its bytes are those of before) and loads as dev."""
        (family,) = load_families(names=["split-into-n"])
        make([family], 3, 1, tmp_path / "dev")
        make([family], 3, 1, tmp_path / "hold", split="holdout")
        for split in ("dev", "hold"):
            for task in sorted((tmp_path / split).glob("*/task.json")):
                assert orjson.loads(task.read_bytes()).get("split") == ("holdout" if split == "hold" else None), task
        assert {s.split for s in load_suite(tmp_path / "dev")} == {"dev"}
        assert {s.split for s in load_suite(tmp_path / "hold")} == {"holdout"}

    def test_asking_for_more_than_the_space_holds_is_one_error(self, tmp_path: Path) -> None:
        """A family whose split cannot give COUNT distinct instances says how many it found."""
        with pytest.raises(FamilyError, match="found only"):
            make(load_families(names=["split-vague-count"]), 5000, 1, tmp_path)

    def test_cli_list_and_generate(self, tmp_path: Path) -> None:
        """`simworld families list` names every family; generate writes scenarios `simworld list` reads."""
        done = subprocess.run([sys.executable, "-m", "simworld", "families", "list"], capture_output=True, text=True,
                              cwd=ROOT)
        assert done.returncode == 0 and "split-into-n" in done.stdout
        done = subprocess.run([sys.executable, "-m", "simworld", "families", "generate", "payoff-quote", "--count",
                               "2", "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        listed = subprocess.run([sys.executable, "-m", "simworld", "list", "--suite", str(tmp_path)],
                                capture_output=True, text=True, cwd=ROOT)
        assert listed.returncode == 0 and listed.stdout.count("payoff-quote-") == 2
        bad = subprocess.run([sys.executable, "-m", "simworld", "families", "generate", "nope", "--out",
                              str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
        assert bad.returncode == 2 and "nope" in bad.stderr


@pytest.mark.slow
class TestGroundTruth:
    def test_every_family_checks(self, tmp_path: Path) -> None:
        """3 instances of every family at 2 seeds: every solution passes, noop fails, every real mutant is killed;
        the reference agent passes every one and the do-nothing agent fails every one."""
        make(load_families(), 3, 11, tmp_path)
        scenarios = load_suite(tmp_path)
        outcomes = set()
        for scenario in scenarios:
            report = check_scenario(scenario, [0, 5])
            assert report.ok, (scenario.id, report.broken_solutions, report.solution_failures, report.noop_passes,
                               [(o.mutant.description, o.reason) for o in report.outcomes if o.status == "survived"])
            outcomes.update(scenario.allowed_outcomes)
        assert outcomes == {"act", "decline", "escalate", "request_information"}
        for agent, code in (("reference", 0), ("noop", 1)):
            out = tmp_path.parent / f"run-{agent}"
            done = subprocess.run([sys.executable, "-m", "simworld", "run", "--suite", str(tmp_path), "--agent", agent,
                                   "--seed", "3", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
            assert done.returncode == code, done.stdout[-2000:] + done.stderr[-2000:]
            lines = [orjson.loads(x) for x in (out / "results.jsonl").read_bytes().splitlines()]
            assert len(lines) == len(scenarios)
            assert all(x["passed"] is (agent == "reference") for x in lines)

    def test_every_phrasing_of_every_family_passes_its_own_graders(self, tmp_path: Path) -> None:
        """Each of 3 instances of every family, written in every phrasing style the family has (the phrasing
        changes task.json: an injected note adds forbidden patterns), has solutions that pass their own graders at
        seeds 0 and 5. With an injected note, obeying it (a payment nobody made) fails an instance that acts.
        This is the test that would have caught the first release's injected rule forbidding any paid_amount change,
        which a split that drops unpaid instalments trips."""
        import attrs

        from simworld._episode.environment import Environment
        from simworld._episode.judge import grade
        from simworld._episode.play import play
        from simworld._episode.steps import steps_factory
        from simworld._families._generate import draw, write_instance
        from simworld._running.check import solution_failures
        from simworld._scenario.scenario import Step, load_scenario

        failures: list[str] = []
        obeyed = 0
        for family in load_families():
            for inst in draw(family, 3, 11).instances:
                for phrasing in sorted(family.phrasings):
                    variant = attrs.evolve(inst, phrasing=phrasing, id=f"{inst.id}-{phrasing}")
                    write_instance(family, variant, 11, tmp_path)
                    scenario = load_scenario(tmp_path / variant.id)
                    failures += [f"{variant.id}: {f}" for f in solution_failures(scenario, [0, 5])]
                    if phrasing != "injected" or scenario.allowed_outcomes != ("act",) or variant.recovery:
                        continue
                    steps = list(scenario.solutions[0])
                    obey = Step("apply_payment", {"plan_id": "{plan_id}", "amount": "1", "idempotency_key": "obey"})
                    steps.insert(len(steps) - 1, obey)
                    episode = play(Environment(scenario, 0, agent_name="obeys"), steps_factory(steps, "obeys"))
                    if not any(e.tool == "apply_payment" and e.status == "ok" for e in episode.events):
                        continue  # nothing left to pay on this plan
                    result = grade(scenario, episode, [])
                    forbidden = next(c for c in result["checks"] if c["name"] == "no_forbidden_changes")
                    assert not forbidden["passed"] and "marked_paid" in forbidden["detail"], (variant.id, forbidden)
                    obeyed += 1
        assert not failures, failures[:10]
        assert obeyed >= 10

