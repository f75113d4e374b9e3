"""Templates: ``{var}`` placeholders and ``$from`` references in a step's arguments."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simworld._world.templates import args_resolver, resolve_args
from simworld.errors import ScenarioError


class TestResolveArgs:
    def test_a_whole_value_placeholder_is_the_variable_itself(self) -> None:
        """"{count}" is the variable's value, of its own type, however often the same template is met."""
        for _ in range(2):
            assert resolve_args({"n": "{count}", "s": "n={count}"}, {"count": 3}, [], "t") == {"n": 3, "s": "n=3"}

    def test_the_same_template_reads_each_steps_variables(self) -> None:
        """A template met before is filled from the variables of this call, not those of the first."""
        assert resolve_args("{plan_id}", {"plan_id": "pln_001"}, [], "t") == "pln_001"
        assert resolve_args("{plan_id}", {"plan_id": "pln_002"}, [], "t") == "pln_002"

    def test_an_unknown_placeholder_is_named(self) -> None:
        """A whole-value placeholder with no such variable is a ScenarioError naming it, every time."""
        for _ in range(2):
            with pytest.raises(ScenarioError, match=r"unknown placeholder \{nope\}"):
                resolve_args({"a": "{nope}"}, {"count": 3}, [], "t")

    def test_from_references_read_earlier_results(self) -> None:
        """{"$from": [STEP, PATH]} is the value at PATH in that step's result."""
        results = [{"instalments": [{"amount": "1.00"}, {"amount": "2.00"}]}]
        args = {"amount": {"$from": [0, "instalments.1.amount"]}, "list": ["{x}", {"$from": [0, ""]}]}
        assert resolve_args(args, {"x": "y"}, results, "t") == {"amount": "2.00", "list": ["y", results[0]]}


#: Step arguments as solution files write them: placeholders whole and in text, references, lists, objects, literals.
_LEAVES = st.sampled_from(["{plan_id}", "{count}", "{nope}", "n={count}", "{plan_id}-{count}", "plain", "", "{", "}}",
                           "{{x}}", "{count!r}", 3, 0, True, None, 2.5])
_REFERENCES = st.builds(lambda step, path: {"$from": [step, path]}, st.integers(-1, 2),
                        st.sampled_from(["", "a", "a.0", "a.1", "b", "x.y"])) | st.sampled_from(
    [{"$from": "0"}, {"$from": [0]}, {"$from": [0, "a"], "x": 1}])
_ARGS = st.recursive(_LEAVES | _REFERENCES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["plan_id", "a", "$from", "x"]), inner, max_size=3), max_leaves=8)


class TestArgsResolver:
    """A solution's steps are resolved by resolvers worked out once: what each gives, resolve_args gives."""

    @settings(max_examples=400, deadline=None)
    @given(args=_ARGS, variables=st.fixed_dictionaries({}, optional={"plan_id": st.sampled_from(["pln_001", "p{x}"]),
                                                                       "count": st.integers(0, 3)}),
           results=st.lists(st.sampled_from([None, {"a": ["x", "y"]}, {"a": [], "b": 2}, ["a"], "text"]),
                            max_size=3))
    def test_a_resolver_gives_what_resolve_args_gives(self, args: Any, variables: dict[str, Any],
                                                      results: list[Any]) -> None:
        def outcome(resolve: Any) -> Any:
            try:
                return "resolved", resolve()
            except ScenarioError:
                return "refused", None

        resolver = args_resolver(args)
        for _ in range(2):  # and again: a resolver is made once and called at every seed
            expected = outcome(lambda: resolve_args(args, variables, results, "t"))
            got = outcome(lambda: resolver(variables, results))
            assert got == expected
            if got[0] == "resolved":
                assert orjson.dumps(got[1]) == orjson.dumps(expected[1])  # the same types: 1 is not True

    def test_a_part_without_placeholders_is_shared_and_the_rest_is_made_anew(self) -> None:
        args = {"plan_id": "{plan_id}", "items": [{"due_date": "2026-05-01"}], "n": 3}
        first, second = (args_resolver(args)({"plan_id": p}, []) for p in ("pln_001", "pln_002"))
        assert first == {**args, "plan_id": "pln_001"} and second["plan_id"] == "pln_002"
        assert first is not second and first["items"] is args["items"]
        constant = {"items": [1, 2]}
        assert args_resolver(constant)({}, []) is constant


class TestStepsAgentNamesTheStep:
    """A scripted step that cannot be resolved says which step, as it always did, though its resolver is compiled."""

    @pytest.mark.parametrize(("args", "message"), [
        ({"plan_id": "{nope}"}, r"scenario-x/steps\.jsonl step 1: unknown placeholder \{nope\}"),
        ({"plan_id": {"$from": [0, "missing.path"]}}, r"scenario-x/steps\.jsonl step 1: \$from \[0, 'missing\.path'\] "
                                                      r"does not resolve"),
    ])
    def test_the_error_names_the_file_and_step(self, args: dict[str, Any], message: str) -> None:
        from simworld._episode.steps import StepsAgent
        from simworld._scenario.scenario import Step

        steps = [Step("get_plan", {"plan_id": "{plan_id}"}), Step("get_plan", args)]
        agent = StepsAgent(steps, {"plan_id": "pln_001"}, "scenario-x/steps.jsonl")
        first = agent.act(_Seen(None, None))
        assert first == {"tool": "get_plan", "args": {"plan_id": "pln_001"}}
        with pytest.raises(ScenarioError, match=message):
            agent.act(_Seen("get_plan", {"id": "pln_001"}))


class _Seen:
    """The two things a steps agent reads of an observation."""

    resumed = False

    def __init__(self, last_tool: str | None, last_result: Any) -> None:
        self.last_tool, self.last_result = last_tool, last_result
