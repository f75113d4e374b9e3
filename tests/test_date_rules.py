"""Exact examples that pin :mod:`simworld.dates` at its boundaries: month ends, leap days, rolls, errors.

Expected dates are written out by hand from a calendar, never computed by the function under test.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from simworld._world.dates import (
    add_months,
    days_in_month,
    due_date,
    is_business_day,
    local_date,
    months_between,
    next_due_date,
    one_year_term_end,
    parse_date,
    roll,
    schedule_dates,
    shift_years,
)
from simworld.errors import DateError


class TestMonths:
    @pytest.mark.parametrize(("y", "m", "n"), [(2024, 2, 29), (2025, 2, 28), (2100, 2, 28), (2000, 2, 29),
                                               (2026, 4, 30), (2026, 12, 31), (2026, 1, 31)])
    def test_days_in_month(self, y: int, m: int, n: int) -> None:
        """Month lengths, leap years included (2000 leap, 2100 not)."""
        assert days_in_month(y, m) == n

    @pytest.mark.parametrize(("y", "m", "k", "out"), [
        (2026, 1, 0, (2026, 1)), (2026, 12, 1, (2027, 1)), (2026, 1, -1, (2025, 12)), (2026, 11, 1, (2026, 12)),
        (2026, 1, 12, (2027, 1)), (2026, 1, 11, (2026, 12)), (2026, 3, 25, (2028, 4)), (2026, 1, -13, (2024, 12)),
    ])
    def test_add_months(self, y: int, m: int, k: int, out: tuple[int, int]) -> None:
        """(year, month) plus k months, across year ends both ways."""
        assert add_months(y, m, k) == out

    @pytest.mark.parametrize(("a", "b", "n"), [
        (date(2026, 1, 31), date(2026, 2, 1), 1), (date(2026, 1, 1), date(2026, 1, 31), 0),
        (date(2025, 12, 1), date(2027, 2, 1), 14), (date(2026, 3, 1), date(2026, 1, 1), -2),
    ])
    def test_months_between(self, a: date, b: date, n: int) -> None:
        """Whole calendar months between the months of two dates (negative backwards)."""
        assert months_between(a, b) == n


class TestDueDate:
    @pytest.mark.parametrize(("y", "m", "d", "out"), [
        (2024, 2, 31, date(2024, 2, 29)), (2025, 2, 31, date(2025, 2, 28)), (2026, 4, 31, date(2026, 4, 30)),
        (2026, 3, 31, date(2026, 3, 31)), (2026, 2, 28, date(2026, 2, 28)), (2026, 2, 1, date(2026, 2, 1)),
        (2026, 12, 15, date(2026, 12, 15)), (2026, 1, 30, date(2026, 1, 30)),
    ])
    def test_clamped_to_month_end(self, y: int, m: int, d: int, out: date) -> None:
        """min(anchor, month length)."""
        assert due_date(y, m, d) == out

    @pytest.mark.parametrize(("y", "m", "d"), [(2024, 13, 1), (2024, 0, 1), (2024, 1, 0), (2024, 1, 32),
                                               (2024, 1, True), (2024, 1, 1.0)])
    def test_out_of_range_is_a_date_error(self, y: int, m: int, d: object) -> None:
        """A month outside 1..12 or an anchor outside 1..31 (or not an int) is a DateError."""
        with pytest.raises(DateError) as info:
            due_date(y, m, d)  # type: ignore[arg-type]
        assert "month=" in str(info.value) or "anchor_day=" in str(info.value)

    def test_month_message(self) -> None:
        """The month error names the bad month."""
        with pytest.raises(DateError, match=r"Expected month in 1\.\.12 but got month=13\."):
            due_date(2024, 13, 1)
        with pytest.raises(DateError, match=r"anchor_day as an int in 1\.\.31 but got anchor_day=32"):
            due_date(2024, 1, 32)
        assert due_date(2024, 12, 31) == date(2024, 12, 31) and due_date(2024, 1, 1) == date(2024, 1, 1)


class TestSchedule:
    def test_anchor_31_never_drifts(self) -> None:
        """From January, anchor 31 gives each month's end, never Feb 29 -> Mar 29."""
        assert schedule_dates(date(2024, 1, 5), 31, 5) == [
            date(2024, 1, 31), date(2024, 2, 29), date(2024, 3, 31), date(2024, 4, 30), date(2024, 5, 31)]

    def test_count_zero_and_errors(self) -> None:
        """Zero dates is fine; a negative or non-int count and a bad anchor are DateErrors."""
        assert schedule_dates(date(2026, 11, 1), 15, 0) == []
        assert schedule_dates(date(2026, 11, 1), 15, 3) == [date(2026, 11, 15), date(2026, 12, 15),
                                                              date(2027, 1, 15)]
        for count in (-1, True, 1.0):
            with pytest.raises(DateError, match="count as an int >= 0"):
                schedule_dates(date(2026, 1, 1), 15, count)  # type: ignore[arg-type]
        with pytest.raises(DateError):
            schedule_dates(date(2026, 1, 1), 0, 1)

    @pytest.mark.parametrize(("day", "anchor", "out"), [
        (date(2026, 1, 15), 15, date(2026, 1, 15)), (date(2026, 1, 16), 15, date(2026, 2, 15)),
        (date(2026, 1, 14), 15, date(2026, 1, 15)), (date(2026, 2, 28), 31, date(2026, 2, 28)),
        (date(2026, 12, 16), 15, date(2027, 1, 15)), (date(2026, 1, 31), 30, date(2026, 2, 28)),
    ])
    def test_next_due_date(self, day: date, anchor: int, out: date) -> None:
        """The first due date on or after a day: the same day counts."""
        assert next_due_date(day, anchor) == out


class TestTerms:
    @pytest.mark.parametrize(("start", "end"), [
        (date(2026, 1, 1), date(2026, 12, 31)), (date(2024, 2, 29), date(2025, 2, 28)),
        (date(2023, 3, 1), date(2024, 2, 29)), (date(2026, 7, 15), date(2027, 7, 14)),
        (date(2027, 2, 28), date(2028, 2, 27)), (date(2028, 2, 29), date(2029, 2, 28)),
    ])
    def test_one_year_term_end(self, start: date, end: date) -> None:
        """The day before the anniversary; a term starting on Feb 29 ends on Feb 28."""
        assert one_year_term_end(start) == end

    @pytest.mark.parametrize(("day", "years", "out"), [
        (date(2024, 2, 29), 1, date(2025, 2, 28)), (date(2024, 2, 29), 4, date(2028, 2, 29)),
        (date(2026, 3, 31), -1, date(2025, 3, 31)), (date(2026, 1, 1), 0, date(2026, 1, 1)),
    ])
    def test_shift_years(self, day: date, years: int, out: date) -> None:
        """Whole years; Feb 29 becomes Feb 28 in a common year."""
        assert shift_years(day, years) == out


class TestBusinessDays:
    def test_weekdays_and_holidays(self) -> None:
        """Monday to Friday are business days unless a holiday; Saturday and Sunday never."""
        friday, saturday, sunday, monday = date(2026, 5, 1), date(2026, 5, 2), date(2026, 5, 3), date(2026, 5, 4)
        assert is_business_day(friday) and is_business_day(monday)
        assert not is_business_day(saturday) and not is_business_day(sunday)
        assert not is_business_day(friday, {friday})

    @pytest.mark.parametrize(("day", "convention", "out"), [
        (date(2026, 5, 2), "following", date(2026, 5, 4)), (date(2026, 5, 2), "preceding", date(2026, 5, 1)),
        (date(2026, 5, 2), "none", date(2026, 5, 2)), (date(2026, 5, 4), "preceding", date(2026, 5, 4)),
        (date(2026, 5, 30), "modified_following", date(2026, 5, 29)),
        (date(2026, 5, 30), "following", date(2026, 6, 1)),
        (date(2026, 5, 2), "modified_following", date(2026, 5, 4)),
        (date(2026, 5, 1), "following", date(2026, 5, 1)),
    ])
    def test_roll(self, day: date, convention: str, out: date) -> None:
        """Rolls: following, preceding, none, and modified following that stays in the month."""
        assert roll(day, convention) == out  # type: ignore[arg-type]

    def test_roll_over_a_holiday_and_bad_convention(self) -> None:
        """A holiday is skipped like a weekend; an unknown convention is a DateError."""
        assert roll(date(2026, 5, 2), "following", {date(2026, 5, 4)}) == date(2026, 5, 5)
        assert roll(date(2026, 5, 4), "following", {date(2026, 5, 4)}) == date(2026, 5, 5)
        with pytest.raises(DateError, match="convention in"):
            roll(date(2026, 5, 2), "nearest")  # type: ignore[arg-type]


class TestLocalAndParse:
    def test_local_date(self) -> None:
        """An instant's date in a zone; naive means UTC; an unknown zone is a DateError."""
        late = datetime(2026, 4, 20, 23, 30, tzinfo=UTC)
        assert local_date(late, "Asia/Tokyo") == date(2026, 4, 21)
        assert local_date(late, "America/New_York") == date(2026, 4, 20)
        assert local_date(datetime(2026, 4, 20, 23, 30), "Asia/Tokyo") == date(2026, 4, 21)
        assert local_date(datetime(2026, 4, 21, 1, 0, tzinfo=timezone(timedelta(hours=5))), "UTC") == \
            date(2026, 4, 20)
        for zone in ("Mars/Base", "", None):
            with pytest.raises(DateError, match="Unknown time zone"):
                local_date(late, zone)  # type: ignore[arg-type]

    def test_parse_date(self) -> None:
        """ISO dates parse; a date passes through; anything else is a DateError naming the argument."""
        assert parse_date("2024-02-29") == date(2024, 2, 29)
        assert parse_date(date(2026, 1, 1)) == date(2026, 1, 1)
        for bad in ("2025-02-29", "2026-1-01", "20260101", "2026-01-01T00:00", datetime(2026, 1, 1), 20260101,
                    None, " 2026-01-01"):
            with pytest.raises(DateError, match="due_date"):
                parse_date(bad, name="due_date")
