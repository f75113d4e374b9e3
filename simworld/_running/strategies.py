"""Hypothesis strategies for simworld: awkward money, month ends, leap years, DST, perturbed worlds.

Use them in your own property tests::

    from hypothesis import given
    from simworld import strategies as sws

    @given(sws.money(), sws.instalment_counts())
    def test_my_split_keeps_the_total(total, n):
        assert sum(p.minor for p in my_split(total, n)) == total.minor

Every strategy leans towards the values that break billing code: totals that do not
divide evenly, anchor days 28 to 31, 29 February, the days clocks change, and 0- and
3-decimal currencies. Seeds are dev seeds only (never the holdout range), so a probe
never tunes an agent on holdout.

:func:`world_params` draws a scenario's world parameters themselves rather than a
seed, so a failing world shrinks to a simpler one (USD, year shift 0, no jitter, the
plan's own anchor day, the smallest amounts; the order is documented in
:mod:`simworld._world.perturb`) instead of to another arbitrary seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from hypothesis import strategies as st

from simworld._world.dates import days_in_month
from simworld._world.money import EXPONENTS, Money
from simworld._world.perturb import Draws
from simworld._world.splits import HOLDOUT_BASE

__all__ = ["amounts", "anchor_days", "currencies", "dates", "dst_instants", "instalment_counts", "money",
           "scenario_instances", "seeds", "world_params", "worlds"]

T = TypeVar("T")

#: Divisors that leave remainders in everyday splits.
_AWKWARD = (3, 6, 7, 9, 11, 12)


def currencies(exponents: Sequence[int] | None = None) -> st.SearchStrategy[str]:
    """ISO currency codes, optionally only those with the given exponents (0, 2, 3)."""
    codes = sorted(c for c, e in EXPONENTS.items() if exponents is None or e in exponents)
    if not codes:
        raise ValueError(f"Expected exponents among {sorted(set(EXPONENTS.values()))} but got {exponents!r}.")
    return st.sampled_from(codes)


def amounts(min_minor: int = 1, max_minor: int = 10**9) -> st.SearchStrategy[int]:
    """Amounts in minor units, biased to totals that leave a remainder of 1 or N-1 for small N."""
    if min_minor > max_minor:
        raise ValueError(f"Cannot have max_minor={max_minor} < min_minor={min_minor}.")
    awkward = st.builds(lambda k, n, r: k * n + r, st.integers(min_minor, max(min_minor, max_minor // 12)),
                        st.sampled_from(_AWKWARD), st.sampled_from((1, -1)))
    return st.one_of(st.integers(min_minor, max_minor),
                     awkward.filter(lambda m: min_minor <= m <= max_minor))


def money(currency: str | None = None, min_minor: int = 1, max_minor: int = 10**9) -> st.SearchStrategy[Money]:
    """:class:`~simworld._world.money.Money` in ``currency`` (any known currency by default), awkward totals first."""
    codes = st.just(currency) if currency is not None else currencies()
    return st.builds(Money, amounts(min_minor, max_minor), codes)


def instalment_counts(min_count: int = 2, max_count: int = 12) -> st.SearchStrategy[int]:
    """Instalment counts in the policy's 2..12, biased towards 3, 6, 7 and 12."""
    favourites = [n for n in (3, 6, 7, 12) if min_count <= n <= max_count]
    plain = st.integers(min_count, max_count)
    return st.one_of(st.sampled_from(favourites), plain) if favourites else plain


def anchor_days() -> st.SearchStrategy[int]:
    """Anchor days 1..31, half the time 28..31 where month ends clamp."""
    return st.one_of(st.integers(28, 31), st.integers(1, 31))


def _month_end(y: int, m: int) -> date:
    return date(y, m, days_in_month(y, m))


def dates(min_year: int = 1996, max_year: int = 2036) -> st.SearchStrategy[date]:
    """Dates, biased to month ends, 28/29 February, 29 February of leap years and DST change days."""
    years = st.integers(min_year, max_year)
    leap = years.filter(lambda y: days_in_month(y, 2) == 29).map(lambda y: date(y, 2, 29))
    month_end = st.builds(_month_end, years, st.integers(1, 12))
    # Second Sunday of March and first Sunday of November (US), last Sundays of March and October (EU).
    dst = st.builds(_dst_day, years, st.sampled_from(("us-spring", "us-fall", "eu-spring", "eu-fall")))
    return st.one_of(st.dates(date(min_year, 1, 1), date(max_year, 12, 31)), month_end, leap, dst)


def _dst_day(year: int, which: str) -> date:
    if which.startswith("us"):
        month, nth = (3, 2) if which == "us-spring" else (11, 1)
        first = date(year, month, 1)
        sunday = first + timedelta(days=(6 - first.weekday()) % 7)
        return sunday + timedelta(weeks=nth - 1)
    month = 3 if which == "eu-spring" else 10
    last = _month_end(year, month)
    return last - timedelta(days=(last.weekday() - 6) % 7)


def dst_instants(min_year: int = 2000, max_year: int = 2036) -> st.SearchStrategy[datetime]:
    """UTC instants within a day of a clock change, where a local date can flip."""
    return st.builds(lambda d, minutes: datetime(d.year, d.month, d.day, tzinfo=UTC)
                     + timedelta(minutes=minutes),
                     st.builds(_dst_day, st.integers(min_year, max_year),
                               st.sampled_from(("us-spring", "us-fall", "eu-spring", "eu-fall"))),
                     st.integers(-24 * 60, 24 * 60))


def seeds() -> st.SearchStrategy[int]:
    """Dev seeds (never the holdout range); hypothesis shrinks them towards 0."""
    return st.integers(0, HOLDOUT_BASE - 1)


def scenario_instances(scenario: Any) -> st.SearchStrategy[tuple[int, Any]]:
    """``(seed, instance)`` pairs: the scenario's perturbed initial state, clock and variables at a seed."""
    return seeds().map(lambda s: (s, scenario.instance(s)))


def worlds(scenarios: Sequence[Any] | None = None) -> st.SearchStrategy[tuple[Any, int, Any]]:
    """``(scenario, seed, instance)``: whole perturbed worlds drawn across a suite (the bundled one by default)."""
    if scenarios is None:
        from simworld._scenario.scenario import load_suite

        scenarios = load_suite()
    return st.tuples(st.sampled_from(list(scenarios)), seeds()).map(lambda t: (t[0], t[1], t[0].instance(t[1])))


class _HypothesisDraws(Draws):
    """Draws from hypothesis, each choice ordered simplest first so that shrinking simplifies the world."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        super().__init__()
        self.draw = draw

    def _choice(self, name: str, options: list[T], simpler: Callable[[T], Any] | None) -> T:
        ordered = sorted(options, key=simpler) if simpler is not None else options  # stable: ties as listed
        return self.draw(st.sampled_from(ordered))

    def _integer(self, name: str, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


def world_params(scenario: Any) -> st.SearchStrategy[dict[str, Any]]:
    """A scenario's world parameters, drawn one by one: ``{"year_shift": 0, "currency": "USD", ...}``.

    Pin a world with ``scenario.at_world(params)``. Unlike a seed, which maps to its
    world through a hash, each parameter shrinks towards the simplest value that
    still fails: USD, year shift 0, the plan's own anchor day, no premium jitter, no
    awkward remainder, the first choice and the smallest amount of each param.
    """

    @st.composite
    def draw_world(draw: st.DrawFn) -> dict[str, Any]:
        draws = _HypothesisDraws(draw)
        scenario.perturbed(draws)
        return draws.world

    return draw_world()
