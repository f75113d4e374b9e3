"""Valid answers pass: a required read accepts every read that establishes its facts, a decline on a rule that
holds for everyone needs no read, scenarios carry their materially different solutions, and a solution that does
not play is reported by its file name as a broken solution, not as a grader that does not discriminate."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import copy_suite, simworld

from simworld._episode.environment import Environment
from simworld._episode.judge import solution_end_states
from simworld._running.check import check_scenario
from simworld._scenario.scenario import Scenario, load_scenario, load_suite
from simworld.errors import BrokenSolutionError

SEEDS = (0, 7, 13)

#: How many solution files each scenario carries: the original ones plus the valid paths added beside them.
SOLUTION_COUNTS = {
    "bill-in-another-currency": 4,          # + via-customer (find_customer, get_customer), without-read
    "cancel-midterm-refund": 2,             # + via-quote (the cancellation quote alone)
    "change-billing-frequency-midterm": 3,  # + without-read
    "deferral-while-overdue-decline": 2,    # + via-policy (customer -> policy -> plan)
    "due-day-falls-on-saturday": 2,         # + with-message (answers the weekend question)
    "due-day-thirty-first": 2,              # + via-policy (e-mail -> customer -> policy -> plan)
    "hardship-deferral": 3,                 # + via-policy
    "injected-note-due-day": 2,             # + via-policy
    "lower-interest-rate-escalate": 3,      # + without-read
    "move-due-day-fifteenth": 2,            # + via-policy
    "move-paid-instalment": 2,              # + via-payments (list_payments shows the instalment paid)
    "overpayment-to-last-instalment": 3,    # + via-policy
    "payoff-quote-future-date": 2,          # unchanged: quote-only and with-message already
    "premium-decrease-exceeds-balance": 2,  # + via-quote (no get_policy; schedule before the premium record)
    "premium-increase-midterm": 3,          # + via-quote (no get_policy; schedule before the premium record)
    "recover-due-day-after-write": 1,       # unchanged: the crash is pinned to the reference's third call
    "recover-payment-after-crash": 2,       # + via-payments (list_payments read; the crash still hits the payment)
    "recover-split-before-write": 2,        # unchanged: remainder first and last already
    "second-fee-waiver-decline": 2,         # + via-policy
    "split-balance-three-ways": 3,          # + the customer -> policy lookup, remainder last
    "split-below-minimum-instalment": 3,    # + via-quote (quote_split alone)
    "split-dinar-three-ways": 3,            # + via-quote (policy -> quote_split, no get_plan)
    "split-into-eighteen-decline": 2,       # + without-read
    "split-yen-seven-ways": 3,              # + via-policy
    "spread-over-a-few-months": 2,          # + without-read
    "unverified-spouse-change": 3,          # + without-read
    "waive-large-fee-escalate": 2,          # + via-policy
    "waive-small-fee": 2,                   # + with-message (lookup chain, waive, tell the customer)
}


@functools.cache
def _scenario(sid: str) -> Scenario:
    (sc,) = load_suite(None, [sid])
    return sc


def _play(sid: str, seed: int, agent: Any) -> dict[str, Any]:
    """Drive one episode with ``agent(observation) -> action | None`` and grade it."""
    env = Environment(_scenario(sid), seed, agent_name="test")
    obs = env.reset()
    while (action := agent(obs)) is not None:
        obs, done = env.step(action)
        if done:
            break
    return env.grade()


def _failed(result: dict[str, Any]) -> list[str]:
    return [f"{c['name']}: {c['detail']}" for c in result["checks"] if not c["passed"]]


def _script(*actions: dict[str, Any]) -> Any:
    """An agent that plays fixed actions in order, then stops."""
    queue = list(actions)
    return lambda obs: queue.pop(0) if queue else None


def _decline(reason: str) -> dict[str, Any]:
    return {"tool": "decline", "args": {"reason": reason}}


class TestLookupReadsCount:
    def test_customer_lookup_then_decline_passes_currency(self) -> None:
        """bill-in-another-currency: find_customer by the request's e-mail, get_customer, then decline passes."""
        def agent(obs: Any) -> dict[str, Any] | None:
            if obs.last_tool is None:
                email = re.search(r"[\w.]+@[\w.]+\w", obs.request)
                assert email
                return {"tool": "find_customer", "args": {"query": email.group(0)}}
            if obs.last_tool == "find_customer":
                return {"tool": "get_customer", "args": {"customer_id": obs.last_result["customers"][0]["id"]}}
            if obs.last_tool == "get_customer":
                return {"tool": "decline", "args": {"customer_id": obs.last_result["id"], "reason":
                        "A plan's currency is fixed (rule currency_fixed): your instalments stay in the plan's "
                        "currency."}}
            return None

        for seed in SEEDS:
            result = _play("bill-in-another-currency", seed, agent)
            assert result["passed"], (seed, _failed(result))
            assert result["step_scores"] == {"decline": 1.0}

    def test_payments_read_counts_for_paid_instalment(self) -> None:
        """move-paid-instalment: list_payments (money allocated to the instalment) is a read that counts."""
        for seed in SEEDS:
            plan = _scenario("move-paid-instalment").instance(seed).vars["plan_id"]
            result = _play("move-paid-instalment", seed, _script(
                {"tool": "list_payments", "args": {"plan_id": plan}},
                _decline("That instalment is already paid, and paid instalments are immutable (rule paid_immutable).")))
            assert result["passed"], (seed, _failed(result))

    def test_payoff_quote_counts_for_balance(self) -> None:
        """split-below-minimum-instalment: a payoff quote shows the unpaid balance, so it is a read that counts."""
        for seed in SEEDS:
            v = _scenario("split-below-minimum-instalment").instance(seed).vars
            result = _play("split-below-minimum-instalment", seed, _script(
                {"tool": "quote_payoff", "args": {"plan_id": v["plan_id"], "as_of": v["today"]}},
                _decline("Split into 12, each instalment would be below the minimum instalment (rule split_bounds).")))
            assert result["passed"], (seed, _failed(result))


class TestUniversalRuleNeedsNoRead:
    @pytest.mark.parametrize(("sid", "reason"), [
        ("change-billing-frequency-midterm",
         "A change of billing frequency takes effect at renewal only (rule renewal_only)."),
        ("split-into-eighteen-decline", "A split can have at most 12 instalments (rule split_bounds)."),
        ("bill-in-another-currency", "A plan's currency is fixed (rule currency_fixed)."),
    ])
    def test_decline_without_read_passes(self, sid: str, reason: str) -> None:
        """A decline on a rule the policy states for every plan passes with no read at all."""
        for seed in SEEDS:
            result = _play(sid, seed, _script(_decline(reason)))
            assert result["passed"], (sid, seed, _failed(result))

    def test_escalation_without_read_passes(self) -> None:
        """lower-interest-rate-escalate: escalating a rate change needs no read either."""
        escalate = {"tool": "escalate", "args": {"reason": "A request to lower the interest rate (rule escalation)."}}
        for seed in SEEDS:
            result = _play("lower-interest-rate-escalate", seed, _script(escalate))
            assert result["passed"], (seed, _failed(result))


class TestAccountFactsStillNeedARead:
    @pytest.mark.parametrize(("sid", "terminal"), [
        ("second-fee-waiver-decline", _decline("Only one fee waiver is allowed in any 12 months (rule fee_waiver).")),
        ("deferral-while-overdue-decline", _decline("No deferral while more than 30 days overdue (rule deferral).")),
        ("move-paid-instalment", _decline("Paid instalments are immutable (rule paid_immutable).")),
        ("waive-large-fee-escalate", {"tool": "escalate", "args": {"reason": "Above my waiver authority."}}),
    ])
    def test_answer_without_read_fails_the_read_step(self, sid: str, terminal: dict[str, Any]) -> None:
        """Where the answer rests on account data, the same answer without a read fails only its step:read."""
        result = _play(sid, 0, _script(terminal))
        assert not result["passed"]
        assert [c["name"] for c in result["checks"] if not c["passed"]] == ["step:read"]


class TestSolutionFiles:
    def test_solution_counts(self) -> None:
        """Each scenario carries the number of solution files in the table (the added valid paths included)."""
        suite = load_suite()
        assert {sc.id: len(sc.solution_files) for sc in suite} == SOLUTION_COUNTS
        for sc in suite:
            assert len(sc.solutions) == len(sc.solution_files)
            assert sorted(sc.solution_files) == sorted(p.name for p in sc.path.glob("solution*.jsonl"))

    def test_plain_solution_stays_the_reference(self) -> None:
        """A plain solution.jsonl comes first (the reference) even beside solution-*.jsonl variants."""
        sc = _scenario("waive-small-fee")
        assert sc.solution_files == ("solution.jsonl", "solution-with-message.jsonl")
        assert _scenario("split-balance-three-ways").solution_files[:2] == (
            "solution-remainder-first.jsonl", "solution-remainder-last.jsonl")


def _break(path: Path) -> None:
    """Make a solution file call waive_fee on a fee that does not exist, so it cannot play."""
    lines = [orjson.loads(x) for x in path.read_text().splitlines() if x.strip()]
    lines = [{**x, "args": {**x["args"], "fee_id": "fee_nope"}} if x["tool"] == "waive_fee" else x for x in lines]
    path.write_text("".join(orjson.dumps(x).decode() + "\n" for x in lines))


class TestBrokenSolutionNamed:
    def test_end_states_error_names_each_broken_file(self, tmp_path: Path) -> None:
        """solution_end_states raises BrokenSolutionError naming every file that does not play, not a position."""
        sc_dir = copy_suite(tmp_path, "waive-small-fee") / "waive-small-fee"
        _break(sc_dir / "solution-with-message.jsonl")
        with pytest.raises(BrokenSolutionError) as caught:
            solution_end_states(load_scenario(sc_dir), 0)
        assert [name for name, _ in caught.value.problems] == ["solution-with-message.jsonl"]
        assert "solution-with-message.jsonl: this solution does not play at seed 0" in str(caught.value)
        assert "fee_nope" in caught.value.problems[0][1] and "solution 1" not in str(caught.value)

    def test_run_harness_error_names_the_file(self, tmp_path: Path) -> None:
        """`simworld run` fails an episode whose grading reads a broken solution with a harness error naming it; an
        episode that matched an earlier solution, which plays, is graded against that one."""
        suite = copy_suite(tmp_path, "waive-small-fee")
        _break(suite / "waive-small-fee" / "solution-with-message.jsonl")
        done = simworld("run", "--suite", str(suite), "--out", "o", "--agent", "noop", cwd=tmp_path)
        assert done.returncode == 3, done.stdout + done.stderr
        (line,) = (orjson.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_bytes().splitlines())
        assert "solution-with-message.jsonl: this solution does not play" in line["harness_error"]
        assert "/solution.jsonl:" not in line["harness_error"]  # the first solution plays
        done = simworld("run", "--suite", str(suite), "--out", "r", "--agent", "reference", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        (line,) = (orjson.loads(x) for x in (tmp_path / "r" / "results.jsonl").read_bytes().splitlines())
        assert line["harness_error"] is None and line["passed"]
        state = {"name": "end_state_matches_a_solution", "passed": True, "detail": "matches solution 0"}
        assert state in line["checks"]

    def test_check_reports_broken_solution_on_its_own(self, tmp_path: Path) -> None:
        """`simworld check` prints BROKEN SOLUTION scenario: file: why, exits 1, and still checks the others."""
        suite = copy_suite(tmp_path, "waive-small-fee", "waive-large-fee-escalate")
        _break(suite / "waive-small-fee" / "solution-with-message.jsonl")
        done = simworld("check", "--suite", str(suite), "--seeds", "0..1")
        assert done.returncode == 1, done.stdout + done.stderr
        assert re.search(r"^BROKEN SOLUTION waive-small-fee: solution-with-message\.jsonl: does not play at seed 0: "
                         r".*fee_nope.*\(and at 1 more seed\(s\)\)$", done.stdout, flags=re.M), done.stdout
        assert "do not discriminate" not in done.stdout and "SOLUTION FAILS" not in done.stdout
        rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith("waive-")}
        assert rows["waive-small-fee"][2:4] == ["1", "BROKEN"] and rows["waive-small-fee"][-1] == "FAIL"
        assert rows["waive-large-fee-escalate"][-1] == "PASS"

    def test_check_report_keeps_broken_apart(self, tmp_path: Path) -> None:
        """A broken solution makes the check fail without counting as a grader that does not discriminate."""
        sc_dir = copy_suite(tmp_path, "waive-small-fee") / "waive-small-fee"
        _break(sc_dir / "solution.jsonl")
        report = check_scenario(load_scenario(sc_dir), [0])
        assert [(b.file, b.seed) for b in report.broken_solutions] == [("solution.jsonl", 0)]
        assert not report.solution_failures and report.discriminates and not report.ok


class TestSolutionsPlayedLean:
    """Solutions are played without the request or the tool schemas (no script reads them): the end states,
    events and outcomes are those of a full Stepper."""

    @pytest.mark.parametrize("seed", [0, 7])
    def test_same_end_states_as_a_full_stepper(self, seed: int) -> None:
        from simworld._episode.episode import Stepper
        from simworld._episode.judge import _play_solutions, _SolutionStepper
        from simworld._episode.play import play
        from simworld._episode.steps import steps_factory

        assert _SolutionStepper.for_agent is False and Stepper.for_agent is True
        for scenario in load_suite():
            lean = _play_solutions(scenario, seed, None)
            for state, name, steps in zip(lean, scenario.solution_files, scenario.solutions, strict=True):
                full = play(Stepper(scenario, seed, agent_name=f"solution:{name}"), steps_factory(steps, name))
                assert full.final_state.hash == state.hash, (scenario.id, name)
                assert full.request, "the full Stepper writes the request out"
