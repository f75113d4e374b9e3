"""task.json's grading keys: every load-time problem fails loudly with a message naming it.

Each test copies a shipped scenario and the snapshots into ``tmp_path`` (the layout
``tmp/scenarios/ID`` + ``tmp/snapshots``), edits task.json, and loads it. Custom grader
modules are written next to ``scenarios/`` (the suite's parent), which the loader puts
on the import path.
"""

from __future__ import annotations

import importlib
import itertools
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from simworld._episode.environment import Environment
from simworld._episode.judge import grade, solution_end_states
from simworld._episode.play import play
from simworld._episode.steps import steps_factory
from simworld._scenario.scenario import load_scenario
from simworld.errors import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
SID = "split-balance-three-ways"

_ids = itertools.count()


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch) -> Iterator[None]:
    """Undo the loader's sys.path additions and forget the modules a test wrote."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("_te_"):
            del sys.modules[name]


@pytest.fixture
def scenario_dir(tmp_path: Path) -> Path:
    """A copy of split-balance-three-ways under tmp/scenarios, with tmp/snapshots beside it."""
    shutil.copytree(ROOT / "snapshots", tmp_path / "snapshots")
    target = tmp_path / "scenarios" / SID
    shutil.copytree(ROOT / "scenarios" / SID, target)
    return target


def edit(directory: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """Apply ``change`` to the directory's task.json; return the task.json path."""
    path = directory / "task.json"
    data = orjson.loads(path.read_bytes())
    change(data)
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    return path


def write_module(scenario_dir: Path, source: str) -> str:
    """Write a grader module next to scenarios/ (the suite's parent); return its unique module name."""
    name = f"_te_graders_{next(_ids)}"
    (scenario_dir.parent.parent / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    importlib.invalidate_caches()
    return name


def fails(directory: Path, pattern: str) -> ScenarioError:
    with pytest.raises(ScenarioError, match=pattern) as info:
        load_scenario(directory)
    assert "task.json" in str(info.value), f"the message names the file: {info.value}"
    return info.value


def set_key(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data[key] = value
    return change


def add_grader(entry: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data.setdefault("graders", []).append(entry)
    return change


_OK_GRADER = """
from simworld.verdict import Check, Verdict

def grade(episode):
    return Verdict.from_checks([Check("custom:ok", True, "")])
"""


class TestCopiedScenario:
    def test_untouched_copy_loads(self, scenario_dir: Path) -> None:
        """The copied scenario loads as it is (so each failure below is caused by its one edit)."""
        sc = load_scenario(scenario_dir)
        assert sc.id == SID and sc.path == scenario_dir
        assert [g.part for g in sc.expectations.graders] == ["outcome", "state", "steps", "forbidden", "authority",
                                                             "money", "comms", "requires"]


class TestTopLevel:
    def test_unknown_top_level_key(self, scenario_dir: Path) -> None:
        """An unknown top-level key is named, with the allowed keys listed."""
        edit(scenario_dir, set_key("colour", "blue"))
        err = fails(scenario_dir, r"unknown key\(s\) \['colour'\] in task\.json; allowed: id, category")
        for allowed in ("required_steps", "forbidden_changes", "graders", "weights", "requires"):
            assert allowed in str(err)

    def test_misspelt_category(self, scenario_dir: Path) -> None:
        """A misspelt category ("splt") is named, with the allowed categories."""
        edit(scenario_dir, set_key("category", "splt"))
        err = fails(scenario_dir, r"category: 'splt' is not allowed; allowed: ")
        assert "split" in str(err) and "premium-change" in str(err)

    def test_prompt_md_wins_over_prompt_key(self, scenario_dir: Path) -> None:
        """prompt.md wins over a "prompt" key; without prompt.md the key is the request."""
        edit(scenario_dir, set_key("prompt", "KEY PROMPT for {customer_name}"))
        from_file = (scenario_dir / "prompt.md").read_text(encoding="utf-8").strip()
        sc = load_scenario(scenario_dir)
        assert sc.prompt == from_file and "KEY PROMPT" not in sc.prompt
        (scenario_dir / "prompt.md").unlink()
        sc = load_scenario(scenario_dir)
        assert sc.prompt == "KEY PROMPT for {customer_name}"
        assert sc.request(sc.instance(0).vars).startswith("KEY PROMPT for Maria")

    def test_no_prompt_at_all(self, scenario_dir: Path) -> None:
        """Without prompt.md or a prompt key the scenario does not load."""
        (scenario_dir / "prompt.md").unlink()
        fails(scenario_dir, r"no request")

    def test_empty_expectations_refused(self, scenario_dir: Path) -> None:
        """expected_final_state false, no required_steps, no requires and no graders is refused."""
        def change(data: dict[str, Any]) -> None:
            data["expected_final_state"] = False
            data.pop("required_steps", None)
            data.pop("requires", None)
            data.pop("graders", None)
        edit(scenario_dir, change)
        fails(scenario_dir, r"no expectations: set expected_final_state, required_steps, requires or a grader")

    @pytest.mark.parametrize("keep", ["expected_final_state", "required_steps", "requires", "graders"])
    def test_any_one_expectation_is_enough(self, scenario_dir: Path, keep: str) -> None:
        """Each of an end state, required steps, a requires block or a grader alone is an expectation."""
        name = write_module(scenario_dir, _OK_GRADER)

        def change(data: dict[str, Any]) -> None:
            data["expected_final_state"] = keep == "expected_final_state"
            for key in ("required_steps", "requires", "graders"):
                if key != keep:
                    data.pop(key, None)
            if keep == "graders":
                data["graders"] = [{"grader": f"{name}:grade"}]
        edit(scenario_dir, change)
        assert load_scenario(scenario_dir).expectations.graders

    def test_expected_final_state_must_be_a_bool(self, scenario_dir: Path) -> None:
        """expected_final_state "yes" is refused."""
        edit(scenario_dir, set_key("expected_final_state", "yes"))
        fails(scenario_dir, r"expected_final_state: expected true or false but got 'yes'")


class TestRequires:
    def test_bound_key_must_be_min_or_max(self, scenario_dir: Path) -> None:
        """{"steps": {"minimum": 1}} names "minimum" and says the allowed keys are min, max."""
        edit(scenario_dir, set_key("requires", {"steps": {"minimum": 1}}))
        fails(scenario_dir, r"unknown key\(s\) \['minimum'\] in requires\.steps; allowed: min, max")

    def test_unknown_counter(self, scenario_dir: Path) -> None:
        """A counter that does not exist is named, with the known counters listed."""
        edit(scenario_dir, set_key("requires", {"coffees": {"max": 1}}))
        err = fails(scenario_dir, r"unknown key\(s\) \['coffees'\] in requires; allowed: steps, tool_calls")
        assert "denied_calls" in str(err) and "stop_reason" in str(err)

    @pytest.mark.parametrize("reason", ["finished", ["terminal", "finished"]])
    def test_bad_stop_reason(self, scenario_dir: Path, reason: Any) -> None:
        """A stop_reason outside the closed list (alone or in a list) is named, with the allowed reasons."""
        edit(scenario_dir, set_key("requires", {"stop_reason": reason}))
        fails(scenario_dir, r"requires\.stop_reason(\[1\])?: .*(terminal, agent_stopped.*'finished'|'finished'.*"
                            r"terminal, agent_stopped)")

    def test_bound_must_be_a_number(self, scenario_dir: Path) -> None:
        """A bound given as a string is refused."""
        edit(scenario_dir, set_key("requires", {"steps": {"max": "12"}}))
        fails(scenario_dir, r"requires\.steps\.max: expected a number but got '12'")

    def test_good_requires_becomes_a_grader(self, scenario_dir: Path) -> None:
        """A valid requires block loads and is graded with its bounds."""
        bounds = {"steps": {"min": 1, "max": 9}, "stop_reason": ["terminal", "max_steps"]}
        edit(scenario_dir, set_key("requires", bounds))
        (spec,) = [g for g in load_scenario(scenario_dir).expectations.graders if g.part == "requires"]
        assert spec.args == {"bounds": bounds}


class TestCustomGraders:
    @pytest.mark.parametrize("param", ["transcript", "messages", "result", "history"])
    def test_grader_reading_words_refused(self, scenario_dir: Path, param: str) -> None:
        """A grader taking a parameter named transcript, messages, result or history is refused, saying why."""
        name = write_module(scenario_dir, f"""
            def grade(episode, {param}=None):
                raise AssertionError("never called")
        """)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade"}))
        err = fails(scenario_dir, rf"takes a parameter named '{param}'")
        assert "graders judge what the agent did" in str(err) and "never what it said" in str(err)

    def test_grader_reading_words_refused_in_pre_grade_hook(self, scenario_dir: Path) -> None:
        """The same refusal holds for a grader named in hooks.pre_grade."""
        name = write_module(scenario_dir, """
            def grade(episode, *, messages):
                raise AssertionError("never called")
        """)
        edit(scenario_dir, set_key("hooks", {"pre_grade": [f"{name}:grade"]}))
        fails(scenario_dir, r"hooks\.pre_grade\[0\].*takes a parameter named 'messages'")

    @pytest.mark.parametrize("signature", ["ep", "*, episode", "", "state, episode"])
    def test_first_parameter_must_be_episode(self, scenario_dir: Path, signature: str) -> None:
        """A grader whose first positional parameter is not `episode` is refused."""
        name = write_module(scenario_dir, f"""
            def grade({signature}):
                raise AssertionError("never called")
        """)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade"}))
        fails(scenario_dir, r"must take the episode as its first positional parameter, named 'episode'")

    def test_grader_that_does_not_import(self, scenario_dir: Path) -> None:
        """A grader module that cannot be imported is named."""
        edit(scenario_dir, add_grader({"grader": "_te_no_such_module_anywhere:grade"}))
        fails(scenario_dir, r"graders\[0\]: cannot import '_te_no_such_module_anywhere'")

    def test_grader_module_that_raises_on_import(self, scenario_dir: Path) -> None:
        """A grader module whose own import fails is reported as not importable."""
        name = write_module(scenario_dir, """
            import _te_missing_dependency_xyz
            def grade(episode):
                pass
        """)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade"}))
        fails(scenario_dir, rf"cannot import '{name}'")

    def test_grader_function_missing(self, scenario_dir: Path) -> None:
        """A module without the named function is refused, naming the function."""
        name = write_module(scenario_dir, _OK_GRADER)
        edit(scenario_dir, add_grader({"grader": f"{name}:nope"}))
        fails(scenario_dir, rf"'{name}' has no function 'nope'")

    def test_grader_path_not_dotted(self, scenario_dir: Path) -> None:
        """A path without exactly one colon is refused with an example of the right form."""
        edit(scenario_dir, add_grader({"grader": "graders.state.expected_final_state"}))
        fails(scenario_dir, r"is not a dotted path; write 'module:function'")

    def test_args_that_do_not_fit(self, scenario_dir: Path) -> None:
        """Grader args that the function does not take are refused at load, naming them."""
        name = write_module(scenario_dir, _OK_GRADER)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade", "args": {"threshold": 3}}))
        fails(scenario_dir, rf"args \['threshold'\] do not fit grader '{name}:grade'")

    def test_missing_required_arg(self, scenario_dir: Path) -> None:
        """A required grader argument left out of args is refused at load."""
        name = write_module(scenario_dir, """
            def grade(episode, limit):
                raise AssertionError("never called")
        """)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade"}))
        fails(scenario_dir, rf"grader '{name}:grade' takes 'limit', which is not a grader input")

    def test_args_must_be_an_object(self, scenario_dir: Path) -> None:
        """args given as a list is refused."""
        name = write_module(scenario_dir, _OK_GRADER)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade", "args": [1]}))
        fails(scenario_dir, r"graders\[0\]\.args: expected an object")

    def test_harness_arg_may_not_be_set(self, scenario_dir: Path) -> None:
        """Setting `solutions` in args is refused: the harness supplies it."""
        name = write_module(scenario_dir, """
            def grade(episode, solutions):
                raise AssertionError("never called")
        """)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade", "args": {"solutions": []}}))
        fails(scenario_dir, r"args set 'solutions', which the harness supplies")

    def test_unknown_key_in_grader_entry(self, scenario_dir: Path) -> None:
        """A graders entry with a key other than grader/args is refused."""
        name = write_module(scenario_dir, _OK_GRADER)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade", "weight": 2}))
        fails(scenario_dir, r"unknown key\(s\) \['weight'\] in graders\[0\]; allowed: grader, args")

    def test_custom_grader_joins_the_conjunction(self, scenario_dir: Path) -> None:
        """A custom grader next to scenarios/ is loaded, its checks appear in the result, and it can fail a pass."""
        name = write_module(scenario_dir, """
            from simworld.verdict import Check, Verdict

            def grade(episode, ok, solutions):
                calls = [e.tool for e in episode.events]
                return Verdict.from_checks(
                    [Check("custom:wrote_schedule", "set_schedule" in calls, ",".join(calls)),
                     Check("custom:flag", ok, f"ok={ok}"),
                     Check("custom:saw_solutions", len(solutions) == 3, str(len(solutions)))],
                    custom_found=[ok])
        """)
        edit(scenario_dir, add_grader({"grader": f"{name}:grade", "args": {"ok": True}}))
        sc = load_scenario(scenario_dir)
        assert sc.expectations.graders[-1].path == f"{name}:grade"
        assert sc.expectations.graders[-1].part == "custom"

        env = Environment(sc, 0, agent_name="ref")
        play(env, steps_factory(sc.solutions[0], "ref"))
        result = env.grade()
        checks = {c["name"]: c for c in result["checks"]}
        assert checks["custom:wrote_schedule"]["passed"] and checks["custom:flag"]["passed"]
        assert checks["custom:saw_solutions"]["passed"]
        assert "outcome_allowed" in checks and "end_state_matches_a_solution" in checks
        assert result["passed"] is True and result["parts"]["custom"] == 1.0

        # the same scenario with the grader told to fail: every built-in check passes, the episode does not
        edit(scenario_dir, lambda data: data["graders"][-1]["args"].update(ok=False))
        failing = load_scenario(scenario_dir)
        episode = play(Environment(failing, 0, agent_name="ref"), steps_factory(failing.solutions[0], "ref"))
        out = grade(failing, episode, solution_end_states(failing, 0))
        by_name = {c["name"]: c for c in out["checks"]}
        assert by_name["custom:flag"]["passed"] is False
        assert all(c["passed"] for c in out["checks"] if not c["name"].startswith("custom:flag"))
        assert out["passed"] is False
        assert 0.0 < out["total"] < 1.0 and out["parts"]["custom"] == pytest.approx(2 / 3, abs=1e-4)

    def test_custom_grader_fails_the_noop(self, scenario_dir: Path) -> None:
        """The custom grader sees the do-nothing episode too and its failing check is reported."""
        name = write_module(scenario_dir, """
            from simworld.verdict import Check, Verdict

            def grade(episode):
                calls = [e.tool for e in episode.events]
                return Verdict.from_checks([Check("custom:wrote_schedule", "set_schedule" in calls, "")])
        """)
        edit(scenario_dir, add_grader(f"{name}:grade"))  # a bare string is accepted too
        sc = load_scenario(scenario_dir)
        env = Environment(sc, 0, agent_name="noop")
        env.reset()
        env.step({"tool": "finish", "args": {"summary": "nothing"}})
        result = env.grade()
        (check,) = [c for c in result["checks"] if c["name"] == "custom:wrote_schedule"]
        assert check["passed"] is False and result["passed"] is False


class TestRequiredSteps:
    def _steps(self, steps: list[dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
        return set_key("required_steps", steps)

    def test_cycle_in_after(self, scenario_dir: Path) -> None:
        """Steps whose `after` lists form a cycle are refused, showing the cycle."""
        edit(scenario_dir, self._steps([
            {"id": "a", "tool": "get_plan", "after": ["c"]},
            {"id": "b", "tool": "set_schedule", "after": ["a"]},
            {"id": "c", "tool": "finish", "after": ["b"]},
        ]))
        fails(scenario_dir, r"'after' forms a cycle: a -> c -> b -> a")

    def test_self_cycle(self, scenario_dir: Path) -> None:
        """A step after itself is a cycle."""
        edit(scenario_dir, self._steps([{"id": "a", "tool": "get_plan", "after": ["a"]}]))
        fails(scenario_dir, r"'after' forms a cycle: a -> a")

    def test_after_names_unknown_step(self, scenario_dir: Path) -> None:
        """`after` naming a step id that does not exist is refused, listing the ids."""
        edit(scenario_dir, self._steps([
            {"id": "read", "tool": "get_plan"},
            {"id": "write", "tool": "set_schedule", "after": ["raed"]},
        ]))
        fails(scenario_dir, r"required_steps\[1\]\.after must list step ids from \['read', 'write'\] "
                            r"but got \['raed'\]")

    @pytest.mark.parametrize("tool", ["teleport", ["get_plan", "teleport"]])
    def test_step_with_unknown_tool(self, scenario_dir: Path, tool: Any) -> None:
        """A step naming a tool that does not exist (alone or among alternatives) is refused, listing tools."""
        edit(scenario_dir, self._steps([{"id": "x", "tool": tool}]))
        err = fails(scenario_dir, r"required_steps\[0\]\.tool has 'teleport'; allowed: ")
        assert "set_schedule" in str(err)

    def test_step_tool_outside_scenario_tools(self, scenario_dir: Path) -> None:
        """A step naming a real tool the scenario does not offer is refused."""
        def change(data: dict[str, Any]) -> None:
            data["tools"] = ["find_customer", "get_customer", "get_policy", "get_plan", "quote_split", "set_schedule",
                             "finish"]
            data["required_steps"] = [{"id": "waive", "tool": "waive_fee"}]
        edit(scenario_dir, change)
        fails(scenario_dir, r"required_steps\[0\]\.tool has 'waive_fee'")

    def test_duplicate_step_id(self, scenario_dir: Path) -> None:
        """Two steps with the same id are refused."""
        edit(scenario_dir, self._steps([{"id": "a", "tool": "get_plan"}, {"id": "a", "tool": "finish"}]))
        fails(scenario_dir, r"required_steps\[1\]\.id must be a unique string but got 'a'")

    def test_unknown_step_key(self, scenario_dir: Path) -> None:
        """A step with a key other than id/tool/args/after is refused."""
        edit(scenario_dir, self._steps([{"id": "a", "tool": "get_plan", "before": []}]))
        fails(scenario_dir, r"unknown key\(s\) \['before'\] in required_steps\[0\]; allowed: id, tool, args, after")

    def test_unknown_placeholder_in_step_args(self, scenario_dir: Path) -> None:
        """A step argument with a placeholder no seed can fill fails at load."""
        edit(scenario_dir, self._steps([{"id": "a", "tool": "get_plan", "args": {"plan_id": "{plan_idd}"}}]))
        fails(scenario_dir, r"unknown placeholder \{plan_idd\}")

    def test_good_dag_loads(self, scenario_dir: Path) -> None:
        """A diamond-shaped DAG with alternatives loads and is graded with those steps."""
        steps: list[dict[str, Any]] = [{"id": "read", "tool": ["get_plan", "quote_split"]},
                                       {"id": "who", "tool": "find_customer"},
                                       {"id": "write", "tool": "set_schedule", "after": ["read", "who"]},
                                       {"id": "done", "tool": "finish", "after": ["write"]}]
        edit(scenario_dir, self._steps(steps))
        sc = load_scenario(scenario_dir)
        assert [s["id"] for s in sc.expectations.required_steps] == ["read", "who", "write", "done"]


class TestForbiddenAndWeights:
    def test_forbidden_entry_with_unknown_key(self, scenario_dir: Path) -> None:
        """A forbidden_changes entry with an unknown key is refused, listing the allowed keys."""
        edit(scenario_dir, set_key("forbidden_changes", ["currency", {"path": "fees/*/status", "bogus": 1}]))
        fails(scenario_dir, r"unknown key\(s\) \['bogus'\] in forbidden_changes\[1\]; allowed: name, path, where, "
                            r"after_where, except")

    def test_forbidden_entry_filter_must_list_values(self, scenario_dir: Path) -> None:
        """where and after_where map a field to a list of values: a bare value is refused, naming the key."""
        for key in ("where", "after_where"):
            edit(scenario_dir, set_key("forbidden_changes", [{"path": "plans/*/instalments/*/paid_amount",
                                                              key: {"status": "paid"}}]))
            fails(scenario_dir, rf"forbidden_changes\[0\]\.{key}\.status: expected a list but got 'paid'")

    def test_named_marked_paid_loads(self, scenario_dir: Path) -> None:
        """marked_paid is a named pattern, and an after_where filter is part of the pattern grammar."""
        edit(scenario_dir, set_key("forbidden_changes", ["paid_instalments", "marked_paid", {
            "path": "plans/*/instalments/*/paid_amount", "after_where": {"status": ["paid"]}}]))
        load_scenario(scenario_dir)

    def test_forbidden_entry_without_path(self, scenario_dir: Path) -> None:
        """A forbidden_changes object without a path glob is refused, naming the named patterns."""
        edit(scenario_dir, set_key("forbidden_changes", [{"name": "fees"}]))
        err = fails(scenario_dir, r"forbidden_changes\[0\]: missing required key 'path'")
        assert "paid_instalments" in str(err)

    def test_forbidden_where_must_list_values(self, scenario_dir: Path) -> None:
        """A where filter with a bare value instead of a list is refused."""
        edit(scenario_dir, set_key("forbidden_changes", [{"path": "fees/*/*", "where": {"status": "open"}}]))
        fails(scenario_dir, r"forbidden_changes\[0\]\.where\.status: expected a list")

    def test_good_forbidden_patterns_load(self, scenario_dir: Path) -> None:
        """Named patterns and a glob object load and reach the forbidden grader."""
        patterns = ["paid_instalments", {"name": "open fees", "path": "fees/*/*", "where": {"status": ["open"]},
                                         "except": ["*/waived_on"]}]
        edit(scenario_dir, set_key("forbidden_changes", patterns))
        (spec,) = [g for g in load_scenario(scenario_dir).expectations.graders if g.part == "forbidden"]
        assert spec.args == {"patterns": patterns}

    def test_empty_forbidden_list_drops_the_grader(self, scenario_dir: Path) -> None:
        """forbidden_changes [] turns the forbidden grader off."""
        edit(scenario_dir, set_key("forbidden_changes", []))
        assert "forbidden" not in [g.part for g in load_scenario(scenario_dir).expectations.graders]

    def test_weights_with_unknown_part(self, scenario_dir: Path) -> None:
        """weights naming a part that does not exist is refused, listing the parts."""
        edit(scenario_dir, set_key("weights", {"state": 2, "speed": 1}))
        fails(scenario_dir, r"unknown key\(s\) \['speed'\] in weights; allowed: outcome, state, steps, forbidden, "
                            r"authority, money, comms, requires, custom")

    @pytest.mark.parametrize("weight", [-1, "2", True])
    def test_weights_must_be_non_negative_numbers(self, scenario_dir: Path, weight: Any) -> None:
        """A weight that is negative, a string or a bool is refused."""
        edit(scenario_dir, set_key("weights", {"state": weight}))
        fails(scenario_dir, r"weights\.state: expected (a number|a value >= 0)")

    def test_weights_reach_the_total(self, scenario_dir: Path) -> None:
        """Loaded weights are used: weighting the failed part lowers the total of the same episode."""
        # No required steps, so that finishing at once is partial credit rather than a missed step (a gate).
        edit(scenario_dir, set_key("required_steps", []))

        def graded(weights: dict[str, float]) -> dict[str, Any]:
            edit(scenario_dir, set_key("weights", weights))
            sc = load_scenario(scenario_dir)
            env = Environment(sc, 0, agent_name="t")
            env.reset()
            env.step({"tool": "finish", "args": {"summary": "nothing"}})
            return env.grade()

        plain = graded({})
        heavy = graded({"state": 10})
        assert plain["parts"]["state"] < 1.0
        assert heavy["total"] < plain["total"]
        assert heavy["parts"] == plain["parts"]

    @pytest.mark.parametrize(("key", "value", "pattern"), [
        ("unauthorised_actions", "yes", r"unauthorised_actions: expected true or false or an object"),
        ("money_invariants", {"even": False}, r"args \['even'\] do not fit grader 'graders\.money:money_invariants'"),
        ("hooks", {"pre": []}, r"unknown key\(s\) \['pre'\] in hooks; allowed: pre_grade, post_run"),
        ("hooks", {"post_run": ["_te_nowhere:hook"]}, r"hooks\.post_run\[0\]: cannot import '_te_nowhere'"),
    ])
    def test_other_grading_keys_checked(self, scenario_dir: Path, key: str, value: Any, pattern: str) -> None:
        """unauthorised_actions, money_invariants and hooks are checked at load too."""
        edit(scenario_dir, set_key(key, value))
        fails(scenario_dir, pattern)

    def test_grader_switches(self, scenario_dir: Path) -> None:
        """money_invariants {"even_split": false} binds the arg; unauthorised_actions false drops that grader."""
        def change(data: dict[str, Any]) -> None:
            data["money_invariants"] = {"even_split": False}
            data["unauthorised_actions"] = False
        edit(scenario_dir, change)
        graders = {g.part: g for g in load_scenario(scenario_dir).expectations.graders}
        assert "authority" not in graders
        assert graders["money"].args == {"even_split": False}
