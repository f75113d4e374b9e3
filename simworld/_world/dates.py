"""Due dates from an anchor day, business-day rolls, and dates in a customer's zone.

A plan's due date for a month is always derived from its anchor day, clamped to
the month's length: anchor 31 gives Jan 31, Feb 28 (29 in a leap year), Mar 31,
Apr 30. It is never derived by adding a month to the previous due date, which
drifts (Jan 31 → Feb 29 → Mar 29 → …).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from datetime import UTC, date, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from simworld.errors import DateError

__all__ = [
    "Roll",
    "add_months",
    "days_in_month",
    "due_date",
    "is_business_day",
    "local_date",
    "months_between",
    "next_due_date",
    "one_year_term_end",
    "ordinal",
    "parse_date",
    "roll",
    "schedule_dates",
    "shift_years",
]

def ordinal(n: int) -> str:
    """``n`` with its English ordinal suffix: ``1st``, ``2nd``, ``11th``, ``23rd``."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
Roll = Literal["following", "modified_following", "preceding", "none"]
_ROLLS = ("following", "modified_following", "preceding", "none")
_TO_MONDAY = {5: timedelta(days=2), 6: timedelta(days=1)}


#: The days of each month of a common year (index 0 unused).
_MONTH_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@functools.lru_cache(maxsize=4096)  # a few centuries of months: every date a world shifts or clamps asks
def days_in_month(year: int, month: int) -> int:
    """Return the number of days in ``month`` of ``year`` (leap years included), as ``calendar.monthrange`` counts
    them (without importing calendar, and its locale, at every start)."""
    if not 1 <= month <= 12:
        raise ValueError(f"bad month number {month}; must be 1-12")
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _MONTH_DAYS[month]


def _check_anchor(anchor_day: int) -> None:
    if isinstance(anchor_day, bool) or not isinstance(anchor_day, int) or not 1 <= anchor_day <= 31:
        raise DateError(f"Expected anchor_day as an int in 1..31 but got anchor_day={anchor_day!r}.")


def add_months(year: int, month: int, months: int) -> tuple[int, int]:
    """Return the (year, month) that lies ``months`` after (year, month)."""
    index = year * 12 + (month - 1) + months
    return index // 12, index % 12 + 1


def due_date(year: int, month: int, anchor_day: int) -> date:
    """Return the due date in (year, month) for ``anchor_day``: min(day, month length)."""
    _check_anchor(anchor_day)
    if not 1 <= month <= 12:
        raise DateError(f"Expected month in 1..12 but got month={month!r}.")
    return date(year, month, min(anchor_day, days_in_month(year, month)))


def schedule_dates(first: date, anchor_day: int, count: int) -> list[date]:
    """Return ``count`` monthly due dates, the first in ``first``'s month.

    Each date is derived from the anchor for its own month, so month ends never
    drift. ``first``'s day is ignored: only its year and month count.
    """
    _check_anchor(anchor_day)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise DateError(f"Expected count as an int >= 0 but got count={count!r}.")
    return [due_date(*add_months(first.year, first.month, i), anchor_day) for i in range(count)]


def next_due_date(day: date, anchor_day: int) -> date:
    """Return the first due date for ``anchor_day`` on or after ``day`` (in ``day``'s month or the next)."""
    due = due_date(day.year, day.month, anchor_day)
    return due if due >= day else due_date(*add_months(day.year, day.month, 1), anchor_day)


def one_year_term_end(start: date) -> date:
    """Return the last day of a one-year term starting on ``start``: the day before its anniversary.

    The term holds 365 days, or 366 when it spans a 29 February. A term starting on
    29 February has its anniversary on 1 March of a common year, so it ends on 28 February.
    """
    year = start.year + 1
    if start.month == 2 and start.day == 29 and days_in_month(year, 2) == 28:
        return date(year, 2, 28)
    return date(year, start.month, start.day) - timedelta(days=1)


def months_between(start: date, end: date) -> int:
    """Return the whole calendar months from ``start``'s month to ``end``'s month."""
    return (end.year - start.year) * 12 + (end.month - start.month)


def shift_years(day: date, years: int) -> date:
    """Move ``day`` by whole years; Feb 29 becomes Feb 28 in a common year."""
    year = day.year + years
    return date(year, day.month, min(day.day, days_in_month(year, day.month)))


def is_business_day(day: date, holidays: Collection[date] = ()) -> bool:
    """Return whether ``day`` is Monday to Friday and not in ``holidays``."""
    return day.weekday() < 5 and day not in holidays


def roll(day: date, convention: Roll = "following", holidays: Collection[date] = ()) -> date:
    """Roll ``day`` to a business day by ``convention``.

    ``following`` takes the next business day; ``modified_following`` does too
    unless that crosses into the next month, in which case it takes the previous
    business day; ``preceding`` takes the previous one; ``none`` keeps ``day``.
    """
    if convention == "following" and not holidays:  # what nearly every draft date asks: Saturday +2, Sunday +1
        weekday = day.weekday()
        return day if weekday < 5 else day + _TO_MONDAY[weekday]
    if convention not in _ROLLS:
        raise DateError(f"Expected convention in {_ROLLS!r} but got convention={convention!r}.")
    if convention == "none" or is_business_day(day, holidays):
        return day
    step = -1 if convention == "preceding" else 1
    rolled = day
    while not is_business_day(rolled, holidays):
        rolled += timedelta(days=step)
    if convention == "modified_following" and rolled.month != day.month:
        return roll(day, "preceding", holidays)
    return rolled


def local_date(instant: datetime, zone: str) -> date:
    """Return the calendar date of ``instant`` in the IANA time zone ``zone``.

    A naive ``instant`` is taken as UTC. Due dates are dates in the customer's
    zone; this is how "today" for a customer is read off the simulated clock.
    """
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise DateError(f"Unknown time zone {zone!r}; expected an IANA name such as 'Europe/London'.") from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant.astimezone(tz).date()


def parse_date(value: object, *, name: str = "date") -> date:
    """Parse an ISO ``YYYY-MM-DD`` string into a ``date``.

    Raises:
        DateError: on anything else, naming ``name`` and showing the value.
    """
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        raise DateError(f"Expected {name} as an ISO date 'YYYY-MM-DD' but got {name}={value!r}.")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise DateError(f"Expected {name} as an ISO date 'YYYY-MM-DD' but got {name}={value!r}.") from None
