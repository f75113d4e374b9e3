"""Specification of ``simworld.dates``: anchor-day due dates, rolls and local dates.

Due dates are derived from the anchor for each month, clamped to the month's
length, never by adding a month to the previous due date (DOMAIN.md "Rounding and
date drift"); business-day rolls follow the four conventions; "today" for a
customer is the date in the customer's zone.
"""

from __future__ import annotations

import calendar
import itertools
import re
import time
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simworld._world.dates import (
    add_months,
    days_in_month,
    due_date,
    is_business_day,
    local_date,
    months_between,
    parse_date,
    roll,
    schedule_dates,
    shift_years,
)
from simworld.errors import DateError, SimworldError

ROLLS = ["following", "modified_following", "preceding", "none"]

anchors = st.integers(min_value=1, max_value=31)
first_dates = st.dates(min_value=date(1900, 1, 1), max_value=date(2400, 12, 31))
year_months = st.tuples(st.integers(min_value=1900, max_value=2400), st.integers(min_value=1, max_value=12))


def _is_leap(year: int) -> bool:
    """The Gregorian rule, written out independently of the code under test."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _month_index(d: date) -> int:
    return d.year * 12 + d.month - 1


def _naive_add_month(d: date) -> date:
    """The drifting way: add one month to the previous date, clamping only when needed."""
    year, month = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


class TestLeapYears:
    """February has 29 days exactly in Gregorian leap years."""

    @pytest.mark.parametrize(
        ("year", "leap"), [(2000, True), (1900, False), (2024, True), (2100, False), (2023, False), (2400, True)]
    )
    def test_feb_29_exists_only_in_leap_years(self, year: int, leap: bool) -> None:
        """Feb has 29 days in 2000, 2024 and 2400 but 28 in 1900, 2023 and 2100; anchor 29 clamps accordingly."""
        assert days_in_month(year, 2) == (29 if leap else 28)
        assert due_date(year, 2, 29) == date(year, 2, 29 if leap else 28)

    @given(st.integers(min_value=1, max_value=9999))
    def test_february_length_follows_gregorian_rule(self, year: int) -> None:
        """days_in_month(y, 2) is 29 iff y is divisible by 4 and not by 100, or by 400."""
        assert days_in_month(year, 2) == (29 if _is_leap(year) else 28)

    @pytest.mark.parametrize(
        ("month", "days"),
        [(1, 31), (3, 31), (4, 30), (5, 31), (6, 30), (7, 31), (8, 31), (9, 30), (10, 31), (11, 30), (12, 31)],
    )
    def test_other_month_lengths(self, month: int, days: int) -> None:
        """Every other month has its fixed length."""
        assert days_in_month(2023, month) == days
        assert days_in_month(2024, month) == days


class TestDueDate:
    """due_date is the anchor day clamped to the month's length."""

    @pytest.mark.parametrize(
        ("year", "month", "anchor", "expected"),
        [
            (2024, 2, 31, date(2024, 2, 29)),
            (2023, 2, 31, date(2023, 2, 28)),
            (2024, 4, 31, date(2024, 4, 30)),
            (2024, 1, 31, date(2024, 1, 31)),
            (2024, 2, 30, date(2024, 2, 29)),
            (2023, 2, 30, date(2023, 2, 28)),
            (2023, 2, 29, date(2023, 2, 28)),
            (2024, 6, 30, date(2024, 6, 30)),
            (2024, 9, 15, date(2024, 9, 15)),
            (2024, 12, 1, date(2024, 12, 1)),
        ],
    )
    def test_clamp(self, year: int, month: int, anchor: int, expected: date) -> None:
        """Anchors past the month's end land on its last day; others land on the anchor."""
        assert due_date(year, month, anchor) == expected

    @given(year_months, anchors)
    def test_is_min_of_anchor_and_month_length(self, ym: tuple[int, int], anchor: int) -> None:
        """due_date's day is min(anchor, days in month), in the requested month."""
        year, month = ym
        d = due_date(year, month, anchor)
        assert (d.year, d.month) == (year, month)
        assert d.day == min(anchor, calendar.monthrange(year, month)[1])

    @pytest.mark.parametrize("anchor", [0, 32, -1, True, False, "5", 5.0, None])
    def test_bad_anchor(self, anchor: object) -> None:
        """An anchor outside 1..31, a bool, a string or a float is a DateError showing anchor_day=value."""
        with pytest.raises(DateError) as info:
            due_date(2024, 1, anchor)  # type: ignore[arg-type]
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, SimworldError)
        assert f"anchor_day={anchor!r}" in str(info.value)


class TestScheduleDates:
    """schedule_dates derives every date from the anchor, so month ends never drift."""

    def test_anchor_31_from_jan_31_2024_does_not_drift(self) -> None:
        """Anchor 31 gives Jan 31, Feb 29, Mar 31, Apr 30, where adding a month each time gives Mar 29, Apr 29."""
        expected = [date(2024, 1, 31), date(2024, 2, 29), date(2024, 3, 31), date(2024, 4, 30)]
        assert schedule_dates(date(2024, 1, 31), 31, 4) == expected
        naive = [date(2024, 1, 31)]
        for _ in range(3):
            naive.append(_naive_add_month(naive[-1]))
        assert naive == [date(2024, 1, 31), date(2024, 2, 29), date(2024, 3, 29), date(2024, 4, 29)]
        assert schedule_dates(date(2024, 1, 31), 31, 4) != naive

    def test_a_year_of_month_ends(self) -> None:
        """Anchor 31 over 2023 hits every month end, Feb 28 included."""
        got = schedule_dates(date(2023, 1, 1), 31, 12)
        assert got == [date(2023, m, calendar.monthrange(2023, m)[1]) for m in range(1, 13)]

    def test_crosses_year_end(self) -> None:
        """A schedule starting in November continues into January of the next year."""
        assert schedule_dates(date(2024, 11, 5), 15, 3) == [date(2024, 11, 15), date(2024, 12, 15), date(2025, 1, 15)]

    def test_day_of_first_is_ignored(self) -> None:
        """Only first's year and month count: the 1st and the 31st of January give the same schedule."""
        assert schedule_dates(date(2024, 1, 1), 31, 6) == schedule_dates(date(2024, 1, 31), 31, 6)
        assert schedule_dates(date(2024, 1, 20), 5, 1) == [date(2024, 1, 5)]

    def test_count_zero_is_empty(self) -> None:
        """count=0 gives no dates."""
        assert schedule_dates(date(2024, 1, 31), 31, 0) == []

    @pytest.mark.parametrize("count", [-1, True, 1.5, "3", None])
    def test_bad_count(self, count: object) -> None:
        """count must be an int >= 0 (not a bool); the message shows count=value."""
        with pytest.raises(DateError, match=re.escape(f"count={count!r}")):
            schedule_dates(date(2024, 1, 1), 1, count)  # type: ignore[arg-type]

    @pytest.mark.parametrize("anchor", [0, 32, True, "5"])
    def test_bad_anchor(self, anchor: object) -> None:
        """A bad anchor is refused even for an empty schedule."""
        with pytest.raises(DateError, match="anchor_day="):
            schedule_dates(date(2024, 1, 1), anchor, 0)  # type: ignore[arg-type]

    @settings(deadline=None)
    @given(first_dates, anchors, st.integers(min_value=0, max_value=36))
    def test_anchor_clamped_consecutive_increasing(self, first: date, anchor: int, count: int) -> None:
        """count dates, day == min(anchor, month length), consecutive months from first's, strictly increasing."""
        got = schedule_dates(first, anchor, count)
        assert len(got) == count
        for i, d in enumerate(got):
            assert _month_index(d) == _month_index(first) + i
            assert d.day == min(anchor, calendar.monthrange(d.year, d.month)[1])
        assert all(a < b for a, b in itertools.pairwise(got))

    @settings(deadline=None)
    @given(first_dates, anchors, st.integers(min_value=0, max_value=36), st.integers(min_value=0, max_value=36))
    def test_later_start_is_a_suffix(self, first: date, anchor: int, count: int, skip: int) -> None:
        """Starting k months later gives the tail of the same schedule: no date depends on its predecessor."""
        full = schedule_dates(first, anchor, count + skip)
        later = date(*add_months(first.year, first.month, skip), 1)
        assert schedule_dates(later, anchor, count) == full[skip:]


class TestAddMonths:
    """add_months moves a (year, month) by whole months."""

    @pytest.mark.parametrize(
        ("year", "month", "months", "expected"),
        [
            (2024, 1, 1, (2024, 2)),
            (2024, 12, 1, (2025, 1)),
            (2024, 1, -1, (2023, 12)),
            (2024, 1, -13, (2022, 12)),
            (2024, 6, 0, (2024, 6)),
            (2024, 6, 18, (2025, 12)),
            (2024, 6, 19, (2026, 1)),
            (2000, 3, -1200, (1900, 3)),
        ],
    )
    def test_examples(self, year: int, month: int, months: int, expected: tuple[int, int]) -> None:
        """Forward, backward, across year ends and by zero."""
        assert add_months(year, month, months) == expected

    @given(year_months, st.integers(min_value=-1200, max_value=1200))
    def test_inverse(self, ym: tuple[int, int], k: int) -> None:
        """Adding k months then -k months returns the start, and the month is always 1..12."""
        moved = add_months(*ym, k)
        assert 1 <= moved[1] <= 12
        assert add_months(*moved, -k) == ym

    @given(year_months, st.integers(min_value=-600, max_value=600), st.integers(min_value=-600, max_value=600))
    def test_composition(self, ym: tuple[int, int], a: int, b: int) -> None:
        """Adding a then b months is adding a + b months."""
        assert add_months(*add_months(*ym, a), b) == add_months(*ym, a + b)

    @given(year_months, st.integers(min_value=-100, max_value=100))
    def test_twelve_months_is_a_year(self, ym: tuple[int, int], years: int) -> None:
        """Adding 12k months keeps the month and moves the year by k."""
        assert add_months(*ym, 12 * years) == (ym[0] + years, ym[1])


class TestMonthsBetween:
    """months_between counts calendar months and is consistent with add_months."""

    @pytest.mark.parametrize(
        ("start", "end", "expected"),
        [
            (date(2024, 1, 31), date(2024, 2, 1), 1),
            (date(2024, 1, 1), date(2024, 1, 31), 0),
            (date(2024, 3, 15), date(2025, 3, 14), 12),
            (date(2024, 3, 15), date(2023, 12, 31), -3),
        ],
    )
    def test_examples(self, start: date, end: date, expected: int) -> None:
        """Days are ignored; only the calendar months count, and the result can be negative."""
        assert months_between(start, end) == expected

    @given(first_dates, st.integers(min_value=-1200, max_value=1200), st.integers(min_value=1, max_value=28))
    def test_consistent_with_add_months(self, start: date, k: int, day: int) -> None:
        """months_between(start, a date k months later) == k, whatever its day."""
        end = date(*add_months(start.year, start.month, k), day)
        assert months_between(start, end) == k
        assert months_between(end, start) == -k

    @given(first_dates, first_dates)
    def test_add_months_lands_in_end_month(self, start: date, end: date) -> None:
        """Adding months_between(start, end) months to start's month gives end's month."""
        assert add_months(start.year, start.month, months_between(start, end)) == (end.year, end.month)


class TestShiftYears:
    """shift_years moves by whole years; Feb 29 becomes Feb 28 in a common year."""

    @pytest.mark.parametrize(
        ("day", "years", "expected"),
        [
            (date(2024, 2, 29), 1, date(2025, 2, 28)),
            (date(2024, 2, 29), -1, date(2023, 2, 28)),
            (date(2024, 2, 29), 4, date(2028, 2, 29)),
            (date(2024, 2, 29), 76, date(2100, 2, 28)),
            (date(2024, 2, 29), -24, date(2000, 2, 29)),
            (date(2023, 2, 28), 1, date(2024, 2, 28)),
            (date(2024, 1, 31), 1, date(2025, 1, 31)),
            (date(2024, 12, 31), 0, date(2024, 12, 31)),
        ],
    )
    def test_examples(self, day: date, years: int, expected: date) -> None:
        """Feb 29 clamps to Feb 28 only when the target year is common."""
        assert shift_years(day, years) == expected

    @given(
        st.dates(min_value=date(1900, 1, 1), max_value=date(2400, 12, 31)), st.integers(min_value=-500, max_value=500)
    )
    def test_keeps_month_and_day_where_possible(self, day: date, years: int) -> None:
        """The month is kept; the day is kept unless it is Feb 29 landing in a common year."""
        got = shift_years(day, years)
        assert (got.year, got.month) == (day.year + years, day.month)
        if (day.month, day.day) == (2, 29):
            assert got.day == (29 if _is_leap(day.year + years) else 28)
        else:
            assert got == day.replace(year=day.year + years)


class TestIsBusinessDay:
    """Monday to Friday, minus holidays."""

    def test_weekdays_weekends_and_holidays(self) -> None:
        """Fri is a business day, Sat and Sun are not, and a holiday weekday is not."""
        assert is_business_day(date(2024, 8, 30))  # Friday
        assert not is_business_day(date(2024, 8, 31))  # Saturday
        assert not is_business_day(date(2024, 9, 1))  # Sunday
        assert is_business_day(date(2024, 9, 2))
        assert not is_business_day(date(2024, 9, 2), {date(2024, 9, 2)})
        assert is_business_day(date(2024, 9, 2), [date(2024, 9, 3)])


def _near(day: date) -> st.SearchStrategy[frozenset[date]]:
    return st.frozensets(st.integers(min_value=-10, max_value=10).map(lambda n: day + timedelta(days=n)), max_size=8)


class TestRoll:
    """Business-day rolls: following, modified_following, preceding and none."""

    @pytest.mark.parametrize(
        ("day", "convention", "expected"),
        [
            # Saturday 2024-06-01 and Sunday 2024-06-02, start of a month.
            (date(2024, 6, 1), "following", date(2024, 6, 3)),
            (date(2024, 6, 1), "modified_following", date(2024, 6, 3)),
            (date(2024, 6, 1), "preceding", date(2024, 5, 31)),
            (date(2024, 6, 1), "none", date(2024, 6, 1)),
            (date(2024, 6, 2), "following", date(2024, 6, 3)),
            (date(2024, 6, 2), "preceding", date(2024, 5, 31)),
            (date(2024, 6, 2), "none", date(2024, 6, 2)),
            # Saturday 2024-08-31 at month end: modified_following rolls back to Friday.
            (date(2024, 8, 31), "following", date(2024, 9, 2)),
            (date(2024, 8, 31), "modified_following", date(2024, 8, 30)),
            (date(2024, 8, 31), "preceding", date(2024, 8, 30)),
            (date(2024, 8, 31), "none", date(2024, 8, 31)),
            # Sunday 2024-03-31 at month end.
            (date(2024, 3, 31), "following", date(2024, 4, 1)),
            (date(2024, 3, 31), "modified_following", date(2024, 3, 29)),
            # Saturday 2024-03-16 mid-month: modified_following is following.
            (date(2024, 3, 16), "modified_following", date(2024, 3, 18)),
        ],
    )
    def test_weekends(self, day: date, convention: str, expected: date) -> None:
        """Saturdays and Sundays roll per convention; at a month end modified_following goes back."""
        assert day.weekday() >= 5
        assert roll(day, convention) == expected  # type: ignore[arg-type]

    def test_default_is_following(self) -> None:
        """Without a convention, roll takes the next business day."""
        assert roll(date(2024, 8, 31)) == date(2024, 9, 2)

    @pytest.mark.parametrize("convention", ROLLS)
    def test_business_day_unchanged(self, convention: str) -> None:
        """A business day stays put under every convention."""
        assert roll(date(2024, 8, 30), convention) == date(2024, 8, 30)  # type: ignore[arg-type]

    def test_holidays_respected(self) -> None:
        """Holidays are skipped like weekends, including on a weekday and at a month end."""
        mon, tue = date(2024, 6, 3), date(2024, 6, 4)
        assert roll(date(2024, 6, 1), "following", {mon}) == tue
        assert roll(mon, "following", {mon}) == tue
        assert roll(mon, "preceding", {mon, date(2024, 5, 31)}) == date(2024, 5, 30)
        # Friday 2024-05-31 is a holiday: following crosses into June, so modified_following goes back.
        assert roll(date(2024, 5, 31), "following", {date(2024, 5, 31)}) == mon
        assert roll(date(2024, 5, 31), "modified_following", {date(2024, 5, 31)}) == date(2024, 5, 30)
        assert roll(date(2024, 5, 31), "none", {date(2024, 5, 31)}) == date(2024, 5, 31)

    @pytest.mark.parametrize("convention", ["Following", "modified-following", "", "backward", None, 1])
    def test_bad_convention(self, convention: object) -> None:
        """An unknown convention is a DateError showing convention=value, even for a business day."""
        with pytest.raises(DateError) as info:
            roll(date(2024, 8, 30), convention)  # type: ignore[arg-type]
        assert f"convention={convention!r}" in str(info.value)

    @settings(deadline=None)
    @given(
        st.dates(min_value=date(1950, 1, 1), max_value=date(2150, 12, 31)).flatmap(
            lambda d: st.tuples(st.just(d), _near(d))
        )
    )
    def test_properties(self, case: tuple[date, frozenset[date]]) -> None:
        """Rolled days are the nearest business day in the right direction; modified_following stays in the month."""
        day, holidays = case
        fol = roll(day, "following", holidays)
        pre = roll(day, "preceding", holidays)
        mod = roll(day, "modified_following", holidays)
        assert roll(day, "none", holidays) == day
        for got in (fol, pre, mod):
            assert is_business_day(got, holidays)
            assert got.weekday() < 5 and got not in holidays
        assert fol >= day and pre <= day
        # Nearest: nothing in between is a business day.
        assert not any(is_business_day(day + timedelta(days=n), holidays) for n in range((fol - day).days))
        assert not any(is_business_day(day - timedelta(days=n), holidays) for n in range((day - pre).days))
        assert mod.month == day.month
        assert mod == (fol if fol.month == day.month else pre)
        if is_business_day(day, holidays):
            assert fol == pre == mod == day


class TestLocalDate:
    """The calendar date of an instant in a customer's IANA zone."""

    def test_near_midnight_utc_differs_across_zones(self) -> None:
        """23:30 UTC on Jan 15 is Jan 16 in Auckland but Jan 15 in Los Angeles (and UTC)."""
        instant = datetime(2024, 1, 15, 23, 30, tzinfo=UTC)
        assert local_date(instant, "Pacific/Auckland") == date(2024, 1, 16)
        assert local_date(instant, "America/Los_Angeles") == date(2024, 1, 15)
        assert local_date(instant, "UTC") == date(2024, 1, 15)

    def test_just_after_midnight_utc(self) -> None:
        """00:30 UTC on Jan 16 is still Jan 15 in Los Angeles."""
        instant = datetime(2024, 1, 16, 0, 30, tzinfo=UTC)
        assert local_date(instant, "America/Los_Angeles") == date(2024, 1, 15)
        assert local_date(instant, "Pacific/Auckland") == date(2024, 1, 16)

    @pytest.mark.parametrize(
        ("instant", "expected"),
        [
            (datetime(2024, 3, 10, 4, 59, tzinfo=UTC), date(2024, 3, 9)),  # 23:59 EST
            (datetime(2024, 3, 10, 5, 0, tzinfo=UTC), date(2024, 3, 10)),  # 00:00 EST
            (datetime(2024, 3, 10, 7, 0, tzinfo=UTC), date(2024, 3, 10)),  # 03:00 EDT, just after the jump
            (datetime(2024, 3, 11, 3, 59, tzinfo=UTC), date(2024, 3, 10)),  # 23:59 EDT
            (datetime(2024, 3, 11, 4, 0, tzinfo=UTC), date(2024, 3, 11)),  # 00:00 EDT
        ],
    )
    def test_dst_change_day(self, instant: datetime, expected: date) -> None:
        """On 2024-03-10 New York moves from UTC-5 to UTC-4, and midnight follows the new offset."""
        assert local_date(instant, "America/New_York") == expected

    def test_naive_is_utc(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A naive datetime is read as UTC, not as the machine's local time."""
        # Put the machine's zone far from UTC so reading naive as local time would show.
        monkeypatch.setenv("TZ", "Asia/Kolkata")
        time.tzset()
        try:
            # 02:00 read as UTC is Jan 16; read as Kolkata time it would be 20:30 UTC on Jan 15.
            naive = datetime(2024, 1, 16, 2, 0)
            assert local_date(naive, "UTC") == date(2024, 1, 16)
            assert local_date(naive, "Pacific/Auckland") == date(2024, 1, 16)
            assert local_date(naive, "America/Los_Angeles") == date(2024, 1, 15)
        finally:
            monkeypatch.undo()
            time.tzset()

    def test_aware_instant_in_another_zone(self) -> None:
        """An instant given in any zone is converted, not reinterpreted."""
        tokyo_morning = datetime(2024, 1, 16, 8, 0, tzinfo=ZoneInfo("Asia/Tokyo"))  # 23:00 UTC Jan 15
        assert local_date(tokyo_morning, "UTC") == date(2024, 1, 15)
        assert local_date(tokyo_morning, "Asia/Tokyo") == date(2024, 1, 16)

    @pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "", "../etc/passwd", "Not A Zone", "/etc/localtime"])
    def test_unknown_zone(self, zone: str) -> None:
        """An unknown or malformed zone is a DateError showing the zone."""
        with pytest.raises(DateError) as info:
            local_date(datetime(2024, 1, 1, tzinfo=UTC), zone)
        assert repr(zone) in str(info.value)

    @given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 12, 31)))
    def test_naive_equals_utc_aware(self, instant: datetime) -> None:
        """For any instant, the naive form and the UTC-aware form give the same local dates."""
        aware = instant.replace(tzinfo=UTC)
        for zone in ("UTC", "Pacific/Auckland", "America/Los_Angeles"):
            assert local_date(instant, zone) == local_date(aware, zone)
        assert local_date(aware, "UTC") == instant.date()

    @given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.just(UTC)))
    def test_auckland_is_never_behind_los_angeles(self, instant: datetime) -> None:
        """Auckland is 19 to 21 hours ahead of Los Angeles, so its date is the same or one day later."""
        gap = local_date(instant, "Pacific/Auckland") - local_date(instant, "America/Los_Angeles")
        assert gap in (timedelta(0), timedelta(days=1))


class TestParseDate:
    """parse_date accepts ISO YYYY-MM-DD strings and dates, nothing else."""

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            ("2024-02-29", date(2024, 2, 29)),
            ("2023-12-31", date(2023, 12, 31)),
            ("0001-01-01", date(1, 1, 1)),
            ("9999-12-31", date(9999, 12, 31)),
        ],
    )
    def test_good_iso(self, value: str, expected: date) -> None:
        """Valid ISO dates parse, leap day included."""
        assert parse_date(value) == expected

    def test_date_passes_through(self) -> None:
        """A date object is returned as is."""
        assert parse_date(date(2024, 2, 29)) == date(2024, 2, 29)

    @given(st.dates())
    def test_round_trip(self, d: date) -> None:
        """parse_date(d.isoformat()) == d for every date."""
        assert parse_date(d.isoformat()) == d

    @pytest.mark.parametrize(
        "value",
        [
            "2024-02-30",
            "2023-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024/01/01",
            "01/01/2024",
            "2024-1-1",
            "24-01-01",
            " 2024-01-01",
            "2024-01-01T00:00",
            "20240101",
            "2024W011",
            "",
            20240101,
            None,
            2024.0,
            datetime(2024, 1, 1),
            ["2024-01-01"],
        ],
    )
    def test_bad_values(self, value: object) -> None:
        """Impossible dates, other formats, datetimes and non-strings are a DateError showing name=value."""
        with pytest.raises(DateError) as info:
            parse_date(value, name="received_on")
        assert isinstance(info.value, ValueError)
        assert f"received_on={value!r}" in str(info.value)

    def test_default_name(self) -> None:
        """Without a name the message says date=value."""
        with pytest.raises(DateError, match=r"date='2024/01/01'"):
            parse_date("2024/01/01")

    @pytest.mark.parametrize("value", ["2024-W01-1", "20240101  "])
    def test_other_iso_forms_refused(self, value: str) -> None:
        """Only YYYY-MM-DD is accepted: a 10-character week date or padded basic date is a DateError."""
        with pytest.raises(DateError):
            parse_date(value)
