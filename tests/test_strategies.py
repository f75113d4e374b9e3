"""simworld.strategies: the values they draw, and their bias towards what breaks billing code."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from hypothesis import find, given, settings
from hypothesis import strategies as st

from simworld import strategies as sws
from simworld._scenario.scenario import load_suite
from simworld._world.dates import days_in_month
from simworld._world.money import EXPONENTS, Money, exponent
from simworld._world.splits import HOLDOUT_BASE

SPLIT = load_suite(None, ["split-balance-three-ways"])[0]


def _sample(strategy, n: int = 300) -> list:
    out: list = []

    @settings(max_examples=n, database=None, deadline=None)
    @given(strategy)
    def collect(x) -> None:
        out.append(x)

    collect()
    return out


class TestMoney:
    @given(sws.money())
    def test_money_is_valid(self, m: Money) -> None:
        """Drawn money is a positive whole number of minor units in a known currency."""
        assert m.currency in EXPONENTS and m.minor >= 1

    def test_awkward_totals_are_common(self) -> None:
        """Most drawn amounts leave a remainder when split in 3."""
        values = _sample(sws.amounts())
        assert sum(1 for v in values if v % 3) / len(values) > 0.5

    def test_every_exponent_appears(self) -> None:
        """0-, 2- and 3-decimal currencies are all drawn."""
        assert {EXPONENTS[m.currency] for m in _sample(sws.money())} == {0, 2, 3}

    @given(sws.amounts(10, 20))
    def test_bounds_hold(self, v: int) -> None:
        """amounts() respects its bounds, including the awkward branch."""
        assert 10 <= v <= 20

    def test_bad_bounds(self) -> None:
        """Inverted bounds are refused with a message naming both."""
        import pytest

        with pytest.raises(ValueError, match="max_minor=1 < min_minor=2"):
            sws.amounts(2, 1)


class TestCalendar:
    def test_anchor_days_cover_month_ends(self) -> None:
        """Anchor days are 1..31 and every clamping day 28..31 is drawn."""
        values = _sample(sws.anchor_days())
        assert all(1 <= v <= 31 for v in values)
        assert {28, 29, 30, 31} <= set(values)

    def test_dates_include_leap_days_month_ends_and_dst_days(self) -> None:
        """Dates include 29 February, month ends, and the Sundays clocks change on."""
        values = _sample(sws.dates(), 500)
        assert any(d.month == 2 and d.day == 29 for d in values)
        assert sum(1 for d in values if d.day == days_in_month(d.year, d.month)) > 50
        ny = ZoneInfo("America/New_York")

        def changes(d: date) -> bool:
            from datetime import datetime

            a = datetime(d.year, d.month, d.day, 0, tzinfo=ny).utcoffset()
            b = (datetime(d.year, d.month, d.day, 0, tzinfo=ny) + timedelta(days=1)).utcoffset()
            return a != b

        assert any(changes(d) for d in values)

    @given(sws.dst_instants())
    def test_dst_instants_near_a_change(self, instant) -> None:
        """DST instants are aware UTC datetimes within a day of a change day."""
        assert instant.tzinfo is not None and instant.utcoffset() == timedelta(0)

    @given(sws.instalment_counts())
    def test_counts_in_policy_bounds(self, n: int) -> None:
        """Instalment counts stay within the policy's 2..12."""
        assert 2 <= n <= 12


class TestWorlds:
    @given(sws.seeds())
    def test_seeds_are_dev_seeds(self, seed: int) -> None:
        """Seeds never reach the holdout range."""
        assert 0 <= seed < HOLDOUT_BASE

    @settings(max_examples=20, deadline=None)
    @given(sws.scenario_instances(SPLIT))
    def test_scenario_instances_match_the_seed(self, pair) -> None:
        """A drawn instance is exactly the scenario's instance at the drawn seed."""
        seed, inst = pair
        assert inst.state.hash == SPLIT.instance(seed).state.hash

    @settings(max_examples=20, deadline=None)
    @given(sws.worlds([SPLIT]))
    def test_worlds(self, triple) -> None:
        """worlds() draws (scenario, seed, instance) triples."""
        scenario, seed, inst = triple
        assert scenario is SPLIT and inst.vars["plan_id"] == "pln_001" and seed >= 0

    @given(st.data())
    def test_currencies_filter(self, data) -> None:
        """currencies([0]) gives only zero-decimal currencies."""
        assert EXPONENTS[data.draw(sws.currencies([0]))] == 0


class TestWorldParams:
    PREMIUM = load_suite(None, ["premium-increase-midterm"])[0]

    @settings(max_examples=30, deadline=None)
    @given(sws.world_params(SPLIT))
    def test_drawn_parameters_pin_a_valid_world(self, world) -> None:
        """Drawn parameters are exactly what the scenario draws, and pin a world without complaint."""
        assert SPLIT.at_world(world).world == world

    def test_the_simplest_world_comes_first(self) -> None:
        """Shrunk unconditionally: USD, year 0, the plan's own anchor day, no jitter, the smallest param amount."""
        assert find(sws.world_params(self.PREMIUM), lambda w: True) == {
            "year_shift": 0, "anchor_day": 1, "currency": "USD", "jitter": 0, "extra_units": 0,
            "params": {"increase": "150.00"}}

    def test_each_choice_shrinks_towards_simpler(self) -> None:
        """Forced away from the simplest, each parameter stops at the next simplest value."""
        worlds = sws.world_params(self.PREMIUM)
        assert find(worlds, lambda w: w["currency"] != "USD")["currency"] == "EUR"  # 2 decimals, then 0, then 3
        assert find(worlds, lambda w: exponent(w["currency"]) == 3)["currency"] == "KWD"
        assert find(worlds, lambda w: w["currency"] == "JPY")["currency"] == "JPY"
        assert find(worlds, lambda w: w["year_shift"] != 0)["year_shift"] == 1
        assert find(worlds, lambda w: w["year_shift"] < 0)["year_shift"] == -1
        assert find(worlds, lambda w: w["anchor_day"] > 20)["anchor_day"] == 28
        assert find(worlds, lambda w: w["jitter"] > 100)["jitter"] == 101
        usd_200 = find(worlds, lambda w: w["currency"] == "USD" and Decimal(w["params"]["increase"]) >= 200)
        assert usd_200["params"]["increase"] == "200.00"

    def test_seeds_never_shrink_the_world(self) -> None:
        """For contrast: a seed's world is a hash of it, so seed 0's world is not the simplest one."""
        assert SPLIT.instance(0).world != find(sws.world_params(SPLIT), lambda w: True)
