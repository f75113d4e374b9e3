"""Task families: generation is deterministic and de-duplicated, holdout is disjoint, and the ground truth is proven."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
        from the tree before the fixtures were added). Both digests were taken again for issue 28, which changed on
        purpose every original family but split-into-n and injected-instruction: phrasings where the customer writes
        (not the desk greeting them), premium-change-midterm's escalation, the refusal told in a message
        (split-and-waive, waive-and-move), the deferral and frequency refusals, hardship-deferral's fixtures, and
        for the outcome mix rate-or-pricing-escalate's fixtures cut to 56 and premium-change-midterm's grown to 42
        (the second digest holds neither), and a split-and-waive instance whose split keeps the schedule's amounts no
        longer dropped (its summary's "split into N" is borne out by the call)."""
        import hashlib

        make(load_families(names=list(ORIGINAL_FAMILIES)), 8, 2026, tmp_path, workers=2)
        digest = hashlib.sha256()
        files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
        for p in files:
            digest.update(str(p.relative_to(tmp_path)).encode() + b"\0" + p.read_bytes() + b"\0")
        assert (digest.hexdigest(), len(files)) == (
            "aa1914a46f7a170b54d9a1ecc4fb3d6961ad2a0b0cda797c31b633eec9a9bdd2", 580)
        unchanged = tmp_path.parent / (tmp_path.name + "-unchanged")
        make(load_families(names=[n for n in ORIGINAL_FAMILIES if n not in FIXTURES_ADDED]), 8, 2026, unchanged)
        digest = hashlib.sha256()
        files = sorted(p for p in unchanged.rglob("*") if p.is_file())
        for p in files:
            digest.update(str(p.relative_to(unchanged)).encode() + b"\0" + p.read_bytes() + b"\0")
        assert (digest.hexdigest(), len(files)) == (
            "5cfeb15dfb6d1a1093407775a50205205506e4bc77d0803f0673590294cd99f0", 307)

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
        outcomes: set[str] = set()
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



# -- issue 28: ground truth a careful domain reader accepts ------------------------------------------------------


class _Script:
    """An agent that plays fixed actions; an action may carry ``say`` (words to the customer) beside its call."""

    def __init__(self, actions: list[dict[str, Any]], variables: dict[str, Any]) -> None:
        from simworld._world.templates import resolve_args

        self.actions = [resolve_args(a, dict(variables), [], "test script") for a in actions]

    def act(self, observation: object) -> dict[str, Any] | None:
        return self.actions.pop(0) if self.actions else None


def _play(scenario: Any, seed: int, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The graded result line of ``actions`` played on ``scenario`` at ``seed``."""
    from simworld._episode.environment import Environment
    from simworld._episode.judge import graded_line
    from simworld._episode.play import play

    episode = play(Environment(scenario, seed, agent_name="script"),
                   lambda sc, s, variables: _Script(actions, variables))
    return graded_line(scenario, episode)


def _instance(family: Any, fixture: dict[str, str], params: tuple[dict[str, Any], ...], out: Path) -> Any:
    """The instance of ``family`` at one point of its parameter space, written and loaded as ``run`` loads it."""
    import random

    from simworld._families import Instance, solve
    from simworld._families._generate import _block, _task_params, _verdicts, _Worlds, write_instance
    from simworld._scenario.scenario import load_scenario

    f = family  # a Family
    block = _block(f, random.Random(repr((fixture, params))), params)
    verdicts = _verdicts(f, fixture, block, _task_params(f, params), params, _Worlds())
    solved = solve([(i, p) for (i, _), p in zip(f.intents, params, strict=True)], verdicts)
    iid = f"{f.name}-{abs(hash(repr((fixture, params)))) % 10**10}"
    inst = Instance(iid, f.name, "dev", fixture, params, "plain", None, block, solved)
    write_instance(f, inst, 0, out)
    return load_scenario(out / iid)


class TestOverpaymentToLast:
    def test_the_next_instalment_is_paid_and_only_the_excess_goes_on_the_last(self, tmp_path: Path) -> None:
        """At every fixture and band of `apply_to: last` (the request: "paying X instead of just the next N; put what
        is over towards my last payment"), at several seeds: the payment is the next instalment plus the excess; the
        natural answer (the next instalment paid oldest-first, then the excess from the last) passes every grader,
        and posting the whole payment from the last backwards (the next instalment left unpaid) fails."""
        from decimal import Decimal

        (family,) = load_families(names=["overpayment-to-last"])
        natural = [{"tool": "get_plan", "args": {"plan_id": "{plan_id}"}},
                   {"tool": "apply_payment", "args": {"plan_id": "{plan_id}", "amount": "{next_amount}",
                                                      "idempotency_key": "pay-next"}},
                   {"tool": "apply_payment", "args": {"plan_id": "{plan_id}", "amount": "{excess}",
                                                      "idempotency_key": "pay-rest", "apply_to": "last"}},
                   {"tool": "finish", "args": {"summary": "Your next instalment is paid and the rest of your "
                                                          "payment went towards your last instalment."}}]
        all_to_last = [natural[0], {"tool": "apply_payment", "args": {"plan_id": "{plan_id}", "amount": "{payment}",
                                                                      "idempotency_key": "pay", "apply_to": "last"}},
                       natural[-1]]
        played = 0
        for fixture in family.fixtures:
            for band in ("small", "large"):
                scenario = _instance(family, fixture, ({"apply_to": "last", "band": band},), tmp_path)
                if scenario.allowed_outcomes != ("act",):
                    continue  # an unverified holder: asked to verify, nothing posted
                for seed in (0, 1, 2, 3):
                    v = scenario.instance(seed).vars
                    assert Decimal(v["payment"]) - Decimal(v["next_amount"]) == Decimal(v["excess"]) > 0, v
                    good = _play(scenario, seed, natural)
                    assert good["passed"], (fixture, band, seed, [c for c in good["checks"] if not c["passed"]])
                    assert not _play(scenario, seed, all_to_last)["passed"], (fixture, band, seed)
                    played += 1
        assert played >= 7 * 2 * 4


class TestRefusalsSayWhy:
    def test_a_frequency_not_offered_is_not_said_to_wait_for_renewal(self) -> None:
        """Quarterly, weekly or fortnightly billing is declined as not offered (monthly and annual only); only a
        switch to annual is said to take effect at renewal."""
        from simworld._families import INTENTS

        reason = INTENTS["frequency"].reasons
        assert "renewal only" in reason({"wanted": "annual"}, "frequency")
        for wanted in ("quarterly", "weekly", "fortnightly"):
            text = reason({"wanted": wanted}, "frequency")
            assert "not offered" in text and "monthly or annually only" in text, text
            assert "renewal only" not in text and "at renewal" not in text, text

    def test_a_deferral_decline_names_the_one_condition_that_applies(self) -> None:
        """The decline names the deferral rule's condition that applies: the term's deferral used, or an instalment
        more than 30 days overdue, never all three conditions."""
        from simworld._families import INTENTS

        reason = INTENTS["defer"].reasons
        overdue = reason({"mode": "end"}, "deferral:overdue")
        used = reason({"mode": "end"}, "deferral:count")
        assert "overdue" in overdue and "already been used" not in overdue and "term end" not in overdue
        assert "already been used" in used and "overdue" not in used and "term end" not in used

    def test_a_deferral_is_declined_only_on_evidence_the_world_shows(self, tmp_path: Path) -> None:
        """No family with a deferral draws a plan that counts a deferral this term without a deferred (cancelled)
        instalment to show it; deferral-while-overdue declines (the plan shows an instalment more than 30 days
        overdue), naming that condition alone."""
        for family in load_families():
            if not any(i.name == "defer" for i, _ in family.intents):
                continue
            plans = family.snapshot.base.tables["plans"]
            for fixture in family.fixtures:
                plan = plans[fixture["plan"]]
                assert not plan.deferrals or any(i.status == "cancelled" for i in plan.instalments), fixture
        (family,) = load_families(names=["deferral-while-overdue"])
        declines = [i for i in make([family], 6, 4, tmp_path)["deferral-while-overdue"].instances
                    if i.solved.outcomes == ("decline",)]
        assert len(declines) == 6
        for inst in declines:
            reason = inst.solved.solutions[""][-1]["args"]["reason"]
            assert "more than 30 days overdue" in reason and "per term" not in reason, reason

    def test_two_intents_reading_the_same_plan_read_it_once(self, tmp_path: Path) -> None:
        """A vague split with a frequency change (both read the plan) reads it once in every solution."""
        done = make(load_families(names=["vague-split-and-frequency"]), 6, 1, tmp_path)
        for inst in done["vague-split-and-frequency"].instances:
            for label, steps in inst.solved.solutions.items():
                assert sum(1 for s in steps if s["tool"] == "get_plan") <= 1, (inst.id, label)


class TestWaiveAndMoveTellsTheCustomer:
    def test_a_refused_waiver_is_told_to_the_customer(self, tmp_path: Path) -> None:
        """When the move is done and the waiver refused (a second in 12 months), the reference solution tells the
        customer in a message that the fee stays; an agent that says it in words (its own text, then finish) passes
        too, as does one that says it in the text it passes to finish."""
        (family,) = load_families(names=["waive-and-move"])
        done = make([family], 30, 3, tmp_path)["waive-and-move"].instances
        refused = [i for i in done if i.solved.outcomes == ("act",) and any("fee_waiver" in r for r in i.solved.rules)]
        assert refused
        from simworld._scenario.scenario import load_scenario

        for inst in refused[:3]:
            main = inst.solved.solutions[""]
            told = [s for s in main if s["tool"] == "send_message"]
            assert told and "stays open" in told[0]["args"]["body"], main
            assert "told-in-finish" in inst.solved.solutions
            scenario = load_scenario(tmp_path / inst.id)
            text = told[0]["args"]["body"]
            day = next(s["args"]["day"] for s in main if s["tool"] == "change_due_day")
            words = [{"tool": "get_plan", "args": {"plan_id": "{plan_id}"}},
                     {"tool": "list_fees", "args": {"plan_id": "{plan_id}"}},
                     {"tool": "change_due_day", "args": {"plan_id": "{plan_id}", "day": day}},
                     {"say": text, "tool": "finish", "args": {"summary": "Moved your due day as you asked."}}]
            for seed in (0, 1):
                result = _play(scenario, seed, words)
                assert result["passed"], (inst.id, seed, [c for c in result["checks"] if not c["passed"]])


class TestPremiumChangeOnTheCustomersWord:
    def test_acting_and_escalating_are_both_right(self, tmp_path: Path) -> None:
        """No approved change is on record (the approval is the customer's word) and the policy escalates any change
        of pricing: every instance allows act (the quoted change) and escalate; an agent that reads the policy and
        escalates passes, one that records the new premium and then escalates fails, and so does one that finishes
        without changing anything."""
        (family,) = load_families(names=["premium-change-midterm"])
        done = make([family], 4, 2, tmp_path)["premium-change-midterm"].instances
        from simworld._scenario.scenario import load_scenario

        for inst in done:
            assert inst.solved.outcomes == ("act", "escalate")
            scenario = load_scenario(tmp_path / inst.id)
            read = {"tool": "get_policy", "args": {"policy_id": "{policy_id}"}}
            escalate = {"tool": "escalate", "args": {"customer_id": "{customer_id}", "reason": (
                "The customer says underwriting approved a new annual premium of {new_premium} {currency}; no "
                "approved change is on record and pricing changes must be escalated.")}}
            record = {"tool": "record_premium_change", "args": {"policy_id": "{policy_id}",
                                                                "new_annual_premium": "{new_premium}",
                                                                "effective_date": "{next_due_date}"}}
            for seed in (0, 1):
                assert _play(scenario, seed, [read, escalate])["passed"], inst.id
                assert not _play(scenario, seed, [read, record, escalate])["passed"], inst.id
                assert not _play(scenario, seed, [read, {"tool": "finish", "args": {"summary": "Done."}}])["passed"]


@pytest.mark.slow
class TestOutcomeMix:
    def test_no_family_supplies_more_than_two_fifths_of_an_outcome_class(self) -> None:
        """In a draw of 10,000 instances over every family (each family's count as benchmarks/bench_families.py
        shares them out: equal shares, capped at half a family's dev space), no family supplies more than 40% of
        the instances that allow any one outcome class (act, escalate, request_information, decline). The ground
        truth is the solver's; the solutions are not played here (TestGroundTruth plays them)."""
        import collections
        import importlib.util

        from simworld._families._generate import _draw

        spec = importlib.util.spec_from_file_location("bench_families", ROOT / "benchmarks" / "bench_families.py")
        assert spec is not None and spec.loader is not None
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        families = load_families()
        counts = bench._counts(families, 10000)
        by_class: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        drawn = 0
        for family in families:
            n = counts[family.name]
            while True:
                try:
                    instances = _draw(family, n, 1, "dev", None, lambda *a: []).instances  # type: ignore[arg-type]
                    break
                except FamilyError:  # fewer decidable points than the cap: as the benchmark does, ask for fewer
                    n = n * 3 // 4
            drawn += len(instances)
            for inst in instances:
                for outcome in inst.solved.outcomes:
                    by_class[outcome][family.name] += 1
        assert drawn >= 9000
        assert set(by_class) == {"act", "escalate", "request_information", "decline"}
        over = {o: (c.most_common(1)[0], sum(c.values())) for o, c in by_class.items()
                if c.most_common(1)[0][1] > 0.4 * sum(c.values())}
        assert not over, over
