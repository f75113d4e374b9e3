"""Templates: ``{var}`` placeholders and ``$from`` references in a step's arguments."""

from __future__ import annotations

import pytest

from simworld._world.templates import resolve_args
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
