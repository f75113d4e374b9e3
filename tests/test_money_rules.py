"""Exact examples that pin :mod:`simworld.money` where its property tests leave room: ties, limits, messages.

Expected values are written out by hand (never computed by the function under test).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from simworld._world.money import (
    MAX_EXPONENT,
    MAX_MAJOR_DIGITS,
    Money,
    allocate,
    allocate_ratios,
    convert,
    exponent,
    format_minor,
    max_float_major,
    max_minor,
    parse_minor,
)
from simworld.errors import MoneyError


def minors(parts: list[Money]) -> list[int]:
    return [p.minor for p in parts]


class TestConstants:
    def test_limits(self) -> None:
        """15 integer digits, 3 decimals at most, and the per-currency maxima that follow."""
        assert (MAX_MAJOR_DIGITS, MAX_EXPONENT) == (15, 3)
        assert max_minor("USD") == 10**17 - 1 and max_minor("JPY") == 10**15 - 1 and max_minor("KWD") == 10**18 - 1
        assert max_float_major("USD") == 10**13 and max_float_major("JPY") == 10**15

    def test_exponents(self) -> None:
        """ISO 4217 exponents; an unknown currency or a non-string is a MoneyError naming the known ones."""
        assert [exponent(c) for c in ("USD", "JPY", "KWD", "KRW", "TND")] == [2, 0, 3, 0, 3]
        with pytest.raises(MoneyError, match="Unknown currency 'XXX'; expected one of BHD, CHF"):
            exponent("XXX")
        with pytest.raises(MoneyError):
            exponent(None)  # type: ignore[arg-type]


class TestParse:
    @pytest.mark.parametrize(("value", "currency", "minor"), [
        ("333.34", "USD", 33334), ("-5", "USD", -500), ("0.001", "KWD", 1), ("14286", "JPY", 14286),
        (12, "USD", 1200), (333.34, "USD", 33334), (Decimal("1.5"), "USD", 150), ("0", "USD", 0),
        ("999999999999999.99", "USD", 99999999999999999), (-(10**15 - 1), "JPY", -(10**15 - 1)),
        (9999999999999.99, "USD", 999999999999999), (Decimal("0.00"), "USD", 0),
    ])
    def test_accepts(self, value: object, currency: str, minor: int) -> None:
        """Strings, ints, floats and Decimals parse exactly to minor units, up to the limits."""
        assert parse_minor(value, currency) == minor

    @pytest.mark.parametrize(("value", "currency", "message"), [
        (True, "USD", "Expected amount as a decimal string such as '12.34' but got amount=True (type=bool)"),
        (None, "USD", "type=NoneType"), ("1.001", "USD", "more decimals than USD allows (2)"),
        ("1.0001", "USD", "more decimals than USD allows"), ("1.5", "JPY", "more decimals than JPY allows (0)"),
        ("+1", "USD", "no plus sign"), ("1e3", "USD", "no plus sign"), (" 1", "USD", "no plus sign"),
        ("1234567890123456", "USD", "absurdly large"), ("123456789012345.1234", "USD", "more decimals than USD"),
        (10**15, "USD", "absurdly large"),
        (float("nan"), "USD", "finite"), (float("inf"), "USD", "finite"), (Decimal("NaN"), "USD", "finite"),
        (1e13, "USD", "too large to be exact"), (1e15, "USD", "absurdly large"), (Decimal("1E+15"), "USD", "absurdly"),
        (Decimal("0.001"), "USD", "more decimals"), (0.001, "USD", "more decimals"),
    ])
    def test_refuses(self, value: object, currency: str, message: str) -> None:
        """Every refusal is a MoneyError that says what was wrong."""
        with pytest.raises(MoneyError, match=__import__("re").escape(message)):
            parse_minor(value, currency)

    def test_just_below_the_float_limit(self) -> None:
        """A float just under max_float_major is read; exactly at it is refused."""
        assert parse_minor(9999999999999.0, "USD") == 999999999999900
        with pytest.raises(MoneyError):
            parse_minor(10000000000000.0, "USD")
        assert parse_minor(10**15 - 1, "USD") == (10**15 - 1) * 100

    def test_name_in_messages(self) -> None:
        """The argument's name appears in the message."""
        with pytest.raises(MoneyError, match="refund_amount='x'"):
            parse_minor("x", "USD", name="refund_amount")

    def test_huge_int_shown_short(self) -> None:
        """An integer too long to print is described by its digit count."""
        with pytest.raises(MoneyError, match="an integer of about 5001 digits"):
            parse_minor(10**5000, "USD")
        with pytest.raises(MoneyError, match="amount=" + "9" * 40 + " is"):
            parse_minor(10**40 - 1, "USD")
        with pytest.raises(MoneyError, match="an integer of about 41 digits"):
            parse_minor(10**40, "USD")


class TestFormat:
    @pytest.mark.parametrize(("minor", "currency", "text"), [
        (33334, "USD", "333.34"), (5, "USD", "0.05"), (-5, "USD", "-0.05"), (-1, "USD", "-0.01"), (0, "USD", "0.00"),
        (1, "KWD", "0.001"),
        (14286, "JPY", "14286"), (-14286, "JPY", "-14286"), (100, "USD", "1.00"), (1000, "KWD", "1.000"),
    ])
    def test_format(self, minor: int, currency: str, text: str) -> None:
        """Minor units print with the currency's decimals, zero-padded, signed."""
        assert format_minor(minor, currency) == text
        assert str(Money(minor, currency)) == text


class TestMoney:
    def test_validation(self) -> None:
        """minor must be an int (not a bool); currency must be known."""
        with pytest.raises(TypeError, match="Expected minor as an int but got minor=True"):
            Money(True, "USD")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            Money(1.0, "USD")  # type: ignore[arg-type]
        with pytest.raises(MoneyError):
            Money(1, "XXX")

    def test_arithmetic_and_order(self) -> None:
        """+, -, negation and every comparison work on minor units, within one currency only."""
        a, b = Money(5, "USD"), Money(7, "USD")
        assert a + b == Money(12, "USD") and b - a == Money(2, "USD") and -a == Money(-5, "USD")
        assert a < b and not b < a and not a < a
        assert a <= a and a <= b and not b <= a
        assert b > a and not a > b and not a > a
        assert a >= a and b >= a and not a >= b
        with pytest.raises(MoneyError, match="Cannot combine USD with EUR"):
            a + Money(1, "EUR")
        with pytest.raises(TypeError, match="Cannot combine Money with 1"):
            a < 1  # type: ignore[operator]  # noqa: B015

    def test_helpers(self) -> None:
        """zero, parse, exponent and to_decimal."""
        assert Money.zero("JPY") == Money(0, "JPY")
        assert Money.parse("1.5", "KWD") == Money(1500, "KWD")
        assert Money(1, "KWD").exponent == 3
        assert Money(33334, "USD").to_decimal() == Decimal("333.34")
        assert str(Money(-1, "USD").to_decimal()) == "-0.01"


class TestAllocate:
    @pytest.mark.parametrize(("total", "n", "remainder", "parts"), [
        (100000, 3, "first", [33334, 33333, 33333]), (100000, 3, "last", [33333, 33333, 33334]),
        (100, 6, "first", [17, 17, 17, 17, 16, 16]), (100, 6, "last", [16, 16, 17, 17, 17, 17]),
        (99, 3, "last", [33, 33, 33]), (-100, 3, "first", [-34, -33, -33]), (5, 1, "last", [5]),
        (2, 3, "last", [0, 1, 1]), (0, 2, "first", [0, 0]),
    ])
    def test_examples(self, total: int, n: int, remainder: str, parts: list[int]) -> None:
        """Floor and ceil parts, the larger ones together at the named end; negatives mirror positives."""
        assert minors(allocate(Money(total, "USD"), n, remainder)) == parts  # type: ignore[arg-type]

    def test_default_remainder_is_last(self) -> None:
        """Without a remainder argument the extra units go last."""
        assert minors(allocate(Money(100, "USD"), 3)) == [33, 33, 34]

    @pytest.mark.parametrize("parts", [0, -1, True, 1.0])
    def test_bad_parts(self, parts: object) -> None:
        """parts must be an int >= 1."""
        with pytest.raises(MoneyError, match="Expected parts as an int >= 1"):
            allocate(Money(1, "USD"), parts)  # type: ignore[arg-type]

    def test_bad_remainder(self) -> None:
        """remainder must be first or last."""
        with pytest.raises(MoneyError, match="remainder='either'"):
            allocate(Money(1, "USD"), 2, "either")  # type: ignore[arg-type]


class TestAllocateRatios:
    @pytest.mark.parametrize(("total", "ratios", "parts"), [
        (10, [16, 9], [6, 4]), (10, [1, 1], [5, 5]), (10, [1, 1, 1], [4, 3, 3]), (1, [1, 1], [1, 0]),
        (100, [1, 2, 3], [17, 33, 50]), (-10, [16, 9], [-6, -4]), (-1, [1, 1], [-1, 0]), (7, [0, 1], [0, 7]),
        (10, [3], [10]),
        (11, [Fraction(1, 3), Fraction(2, 3)], [4, 7]), (10, [Decimal("0.5"), Decimal("1.5")], [3, 7]),
        (5, [2, 3, 5], [1, 2, 2]), (3, [1, 1, 2, 2], [1, 0, 1, 1]),
    ])
    def test_largest_remainder_ties_to_the_earlier(self, total: int, ratios: list[object], parts: list[int]) -> None:
        """Floors first, then leftover units to the largest fractional remainders, ties to the earlier part."""
        assert minors(allocate_ratios(Money(total, "USD"), ratios)) == parts  # type: ignore[arg-type]

    @pytest.mark.parametrize(("ratios", "message"), [
        ([], "at least one ratio"), ([1, True], r"ratios\[1\] as int, Decimal or Fraction"),
        ([1.5], r"ratios\[0\] as int"), ([Decimal("NaN")], "finite"), ([Decimal("Infinity")], "finite"),
        ([1, -1], r"ratios\[1\] >= 0"), ([0, 0], "positive sum"), ([0], "positive sum"),
    ])
    def test_bad_ratios(self, ratios: list[object], message: str) -> None:
        """Empty, non-numeric, non-finite, negative or all-zero ratios are MoneyErrors."""
        with pytest.raises(MoneyError, match=message):
            allocate_ratios(Money(10, "USD"), ratios)  # type: ignore[arg-type]


class TestConvert:
    rates = {"USD": Decimal(1), "EUR": Decimal("0.5"), "JPY": Decimal(100), "KWD": Decimal("0.3")}

    @pytest.mark.parametrize(("minor", "src", "dst", "out"), [
        (5, "USD", "EUR", 2), (15, "USD", "EUR", 8), (7, "USD", "EUR", 4), (2500, "USD", "JPY", 2500),
        (2500, "USD", "KWD", 7500), (1000, "EUR", "USD", 2000), (150, "JPY", "USD", 150), (1, "JPY", "EUR", 0),
        (-5, "USD", "EUR", -2), (3, "USD", "EUR", 2),
    ])
    def test_rounds_half_even_once(self, minor: int, src: str, dst: str, out: int) -> None:
        """Divide by the source rate, multiply by the target's, round half to even once at the target exponent."""
        assert convert(Money(minor, src), dst, self.rates) == Money(out, dst)

    def test_unknown_rate(self) -> None:
        """A currency without a rate, on either side, is a MoneyError naming it."""
        with pytest.raises(MoneyError, match="No rate for 'GBP'"):
            convert(Money(1, "GBP"), "USD", self.rates)
        with pytest.raises(MoneyError, match="No rate for 'GBP'"):
            convert(Money(1, "USD"), "GBP", self.rates)
