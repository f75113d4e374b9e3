"""Specification of ``simworld.money``: exact parsing, formatting and allocation.

Money is an integer number of minor units plus the currency's ISO 4217 exponent.
Parsing never rounds, formatting is its inverse, and allocation splits a total
into parts that sum to it exactly (DOMAIN.md "Rounding and date drift", invariants
2, 5 and 7).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simworld._world.money import (
    AMOUNT_PATTERN,
    EXPONENTS,
    MAX_EXPONENT,
    MAX_MAJOR_DIGITS,
    Money,
    allocate,
    allocate_ratios,
    exponent,
    format_minor,
    max_float_major,
    parse_minor,
)
from simworld._world.tools import TOOLS
from simworld.errors import MoneyError, SimworldError

CURRENCIES = sorted(EXPONENTS)
currencies = st.sampled_from(CURRENCIES)
remainders = st.sampled_from(["first", "last"])


def _limit(currency: str) -> int:
    """Smallest count of minor units whose major part has too many integer digits."""
    return 10 ** (MAX_MAJOR_DIGITS + EXPONENTS[currency])


@st.composite
def currency_and_minor(draw: st.DrawFn) -> tuple[str, int]:
    """A currency and any amount of it that parse_minor must accept."""
    currency = draw(currencies)
    bound = _limit(currency) - 1
    return currency, draw(st.integers(min_value=-bound, max_value=bound))


def _minors(parts: list[Money]) -> list[int]:
    return [p.minor for p in parts]


def _half_up(value: Decimal, exp: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-exp), rounding=ROUND_HALF_UP)


class TestExponent:
    """ISO 4217 exponents and the unknown-currency error."""

    @pytest.mark.parametrize(
        ("currency", "expected"),
        [
            ("USD", 2),
            ("EUR", 2),
            ("GBP", 2),
            ("CHF", 2),
            ("JPY", 0),
            ("KRW", 0),
            ("KWD", 3),
            ("BHD", 3),
            ("JOD", 3),
            ("OMR", 3),
            ("TND", 3),
        ],
    )
    def test_known_exponents(self, currency: str, expected: int) -> None:
        """Each known currency has its ISO 4217 minor-unit exponent."""
        assert exponent(currency) == expected

    @pytest.mark.parametrize("currency", ["XXX", "usd", "", None, 840, ["USD"]])
    def test_unknown_currency_raises(self, currency: object) -> None:
        """An unknown, lowercase, non-string or unhashable currency is a MoneyError showing the value."""
        with pytest.raises(MoneyError) as info:
            exponent(currency)  # type: ignore[arg-type]
        assert repr(currency) in str(info.value)
        assert "USD" in str(info.value)  # lists what is known


class TestParseMinor:
    """parse_minor / Money.parse accept exact decimal amounts in any accepted form."""

    @pytest.mark.parametrize(
        ("value", "currency", "expected"),
        [
            ("333.34", "USD", 33334),
            ("-5", "USD", -500),
            ("-0.05", "USD", -5),
            ("0", "USD", 0),
            ("-0", "USD", 0),
            ("1.5", "USD", 150),
            ("1.000", "USD", 100),
            ("2.10", "EUR", 210),
            ("100000", "JPY", 100000),
            ("10.000", "KWD", 10000),
            ("0.007", "KWD", 7),
            ("999999999999999.99", "USD", 99999999999999999),
            ("999999999999999.999", "KWD", 999999999999999999),
        ],
    )
    def test_decimal_strings(self, value: str, currency: str, expected: int) -> None:
        """Decimal strings (a minus sign, trailing zeros up to three decimals) parse exactly."""
        assert parse_minor(value, currency) == expected

    @pytest.mark.parametrize(
        ("value", "currency", "expected"),
        [(5, "USD", 500), (-7, "USD", -700), (0, "KWD", 0), (100000, "JPY", 100000), (3, "KWD", 3000)],
    )
    def test_ints(self, value: int, currency: str, expected: int) -> None:
        """An int is a whole number of major units."""
        assert parse_minor(value, currency) == expected

    @pytest.mark.parametrize(
        ("value", "currency", "expected"),
        [
            (333.34, "USD", 33334),
            (0.1, "USD", 10),
            (2.67, "USD", 267),
            (-0.05, "USD", -5),
            (1.0, "JPY", 1),
            (10.001, "KWD", 10001),
            (1e3, "USD", 100000),
        ],
    )
    def test_floats_through_shortest_repr(self, value: float, currency: str, expected: int) -> None:
        """A float is read through its shortest repr, so 333.34 is 33334 cents, not 33333.99999…."""
        assert parse_minor(value, currency) == expected

    @pytest.mark.parametrize(
        ("value", "currency", "expected"),
        [
            (Decimal("333.34"), "USD", 33334),
            (Decimal("-1.250"), "USD", -125),
            (Decimal("7"), "JPY", 7),
            (Decimal("0.001"), "KWD", 1),
        ],
    )
    def test_decimals(self, value: Decimal, currency: str, expected: int) -> None:
        """A Decimal parses exactly."""
        assert parse_minor(value, currency) == expected

    def test_money_parse_wraps_parse_minor(self) -> None:
        """Money.parse gives a Money of the parsed minor units in that currency."""
        assert Money.parse("333.34", "USD") == Money(33334, "USD")
        assert Money.parse(333.34, "USD") == Money(33334, "USD")
        assert Money.parse("10.000", "KWD") == Money(10000, "KWD")

    @given(currency_and_minor())
    def test_int_decimal_and_string_agree(self, cm: tuple[str, int]) -> None:
        """The same amount as a string and as an exact Decimal parses to the same minor units."""
        currency, minor = cm
        as_decimal = Decimal(minor).scaleb(-EXPONENTS[currency])
        assert parse_minor(as_decimal, currency) == minor
        assert parse_minor(str(as_decimal), currency) == minor

    @given(currencies, st.integers(min_value=-(10**15) + 1, max_value=10**15 - 1))
    def test_float_json_numbers_parse_exactly(self, currency: str, minor: int) -> None:
        """A JSON number with at most 15 significant digits arrives as a float and still parses exactly."""
        assume(abs(minor) < _limit(currency))
        value = float(format_minor(minor, currency))
        assert parse_minor(value, currency) == minor


class TestParseErrors:
    """parse_minor refuses anything it would have to round or guess, with a readable MoneyError."""

    @pytest.mark.parametrize(
        ("value", "currency"),
        [
            ("1.005", "USD"),
            (1.005, "USD"),
            (Decimal("1.005"), "USD"),
            ("0.001", "EUR"),
            ("1.5", "JPY"),
            ("0.5", "KRW"),
            ("0.0001", "KWD"),
            ("1.0000000000000000000000000000001", "USD"),
            ("1.0000", "USD"),
            (1e-30, "USD"),
            (2.675, "USD"),
            (0.1 + 0.2, "USD"),
        ],
    )
    def test_excess_precision(self, value: object, currency: str) -> None:
        """More decimals than the currency has is an error, never a silent rounding."""
        with pytest.raises(MoneyError, match="more decimals than"):
            parse_minor(value, currency)

    @pytest.mark.parametrize(
        "value",
        [
            "NaN",
            "nan",
            "sNaN",
            float("nan"),
            Decimal("NaN"),
            "Infinity",
            "-inf",
            "inf",
            float("inf"),
            float("-inf"),
            Decimal("-Infinity"),
        ],
    )
    def test_non_finite(self, value: object) -> None:
        """NaN and the infinities are refused."""
        with pytest.raises(MoneyError):
            parse_minor(value, "USD")

    @pytest.mark.parametrize(
        "value",
        [True, False, None, [1], {"amount": 1}, b"1.00", Fraction(1, 2), object()],
    )
    def test_wrong_types(self, value: object) -> None:
        """A bool, None or any non-numeric type is refused, and the message shows the type."""
        with pytest.raises(MoneyError) as info:
            parse_minor(value, "USD")
        assert f"type={type(value).__name__}" in str(info.value)

    @pytest.mark.parametrize(
        "value",
        ["", "   ", "1,000.00", "1_000", "1 000", "12.34.56", "$5", "five", "0x10", "1.2e", "--1",
         "1e3", "1E+2", "+12", "+2.10", ".5", "5.", " 12 ", "  12.34\n", "12\n", "-", "\u0661\u0662"],
    )
    def test_malformed_strings(self, value: str) -> None:
        """Empty, grouped, signed with +, exponents, bare points, spaces, non-ASCII digits: all refused."""
        with pytest.raises(MoneyError, match="decimal string"):
            parse_minor(value, "USD")

    @pytest.mark.parametrize(
        ("value", "currency"),
        [
            ("100000000000000000000", "USD"),
            (1e20, "USD"),
            (10**15, "USD"),
            ("1000000000000000", "JPY"),
            ("1000000000000000.00", "USD"),
            (Decimal("1E+999999"), "KWD"),
            (-(10**20), "USD"),
        ],
    )
    def test_absurd_magnitudes(self, value: object, currency: str) -> None:
        """More than MAX_MAJOR_DIGITS integer digits is refused as absurd."""
        with pytest.raises(MoneyError, match="absurdly large"):
            parse_minor(value, currency)

    @given(currencies)
    def test_magnitude_boundary(self, currency: str) -> None:
        """The largest 15-digit amount parses; one minor unit more is refused."""
        top = _limit(currency) - 1
        assert parse_minor(format_minor(top, currency), currency) == top
        assert parse_minor(format_minor(-top, currency), currency) == -top
        with pytest.raises(MoneyError):
            parse_minor(format_minor(top + 1, currency), currency)

    @pytest.mark.parametrize("currency", ["XXX", "usd", "", None])
    def test_unknown_currency(self, currency: object) -> None:
        """An unknown currency is refused even for a well-formed amount, showing the currency."""
        with pytest.raises(MoneyError) as info:
            parse_minor("1.00", currency)  # type: ignore[arg-type]
        assert repr(currency) in str(info.value)
        with pytest.raises(MoneyError):
            Money.parse("1.00", currency)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("value", "currency"),
        [
            ("1.005", "USD"),
            ("1.5", "JPY"),
            ("0.0001", "KWD"),
            (float("nan"), "USD"),
            ("Infinity", "USD"),
            ("-inf", "USD"),
            (True, "USD"),
            (None, "USD"),
            ("", "USD"),
            ("1,000.00", "USD"),
            ("1e20", "USD"),
            ("abc", "USD"),
        ],
    )
    def test_message_names_argument_and_value(self, value: object, currency: str) -> None:
        """Every error is a MoneyError and a ValueError whose message reads name=value!r."""
        with pytest.raises(MoneyError) as info:
            parse_minor(value, currency, name="premium")
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, SimworldError)
        assert f"premium={value!r}" in str(info.value)

    def test_money_parse_passes_name(self) -> None:
        """Money.parse forwards the argument name into the error message."""
        with pytest.raises(MoneyError, match=r"fee='1\.005'"):
            Money.parse("1.005", "USD", name="fee")


def _published_patterns() -> list[str]:
    """Every ``pattern`` the tools' JSON schemas publish, wherever it sits (nested ones too)."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "pattern" in node:
                found.append(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for t in TOOLS.values():
        walk(t.schema())
    return found


def _in_published_language(text: str) -> bool:
    """The amount language written out by hand, without a regex: -?, 1 to 15 ASCII digits, then . and 1 to 3."""
    body = text[1:] if text.startswith("-") else text
    whole, point, fraction = body.partition(".")

    def digits(s: str, most: int) -> bool:
        return 1 <= len(s) <= most and all(c in "0123456789" for c in s)

    return digits(whole, MAX_MAJOR_DIGITS) and (not point or digits(fraction, MAX_EXPONENT))


#: Strings in, at the edge of, and far from the amount language.
amount_texts = st.one_of(
    st.from_regex(AMOUNT_PATTERN, fullmatch=True),
    st.from_regex(r"[+-]?[0-9]{0,17}(\.[0-9]{0,5})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.text(alphabet="0123456789.-+eE _\n\t,\u0661", max_size=22),
    st.text(max_size=8),
)


class TestAmountLanguage:
    """The parser accepts exactly the language the tools' schemas publish for amounts."""

    def test_every_amount_publishes_the_one_pattern(self) -> None:
        """Every amount argument of every tool (set_schedule's nested ones too) publishes AMOUNT_PATTERN."""
        patterns = _published_patterns()
        amounts = sum(1 for t in TOOLS.values() for p in t.hints.values() if getattr(p, "__name__", "") == "Amount")
        assert len(patterns) == amounts + 1  # + set_schedule's instalments[].amount
        assert set(patterns) == {AMOUNT_PATTERN}

    @pytest.mark.parametrize("text", ["1e3", "+12", ".5", "5.", " 12 ", "12\n", "1E+2", "0x10", "1_000"])
    def test_forms_the_pattern_forbids_are_refused(self, text: str) -> None:
        """Regression: "1e3", "+12", ".5", "5." and " 12 " were parsed although the published pattern forbids them."""
        assert not re.fullmatch(AMOUNT_PATTERN, text)
        with pytest.raises(MoneyError):
            parse_minor(text, "KWD")

    @settings(max_examples=600)
    @given(amount_texts)
    def test_parser_accepts_exactly_the_schema_language(self, text: str) -> None:
        """For any string: in the published pattern (read as JSON Schema reads it) iff parse_minor accepts it.

        In KWD, with the most decimals any currency has, the two are the same set; in USD and JPY
        the parser accepts a subset of it: the pattern's strings whose decimals the currency has.
        """
        (pattern,) = set(_published_patterns())
        # JSON Schema patterns are ECMA-262 regexes: "$" is the end of the text (Python's "$" also
        # matches before a final newline, "\Z" does not).
        in_schema = re.search(pattern.removesuffix("$") + r"\Z", text) is not None
        assert in_schema == _in_published_language(text)
        try:
            parse_minor(text, "KWD")
            accepted = True
        except MoneyError:
            accepted = False
        assert accepted == in_schema
        for currency in ("USD", "JPY"):
            try:
                minor = parse_minor(text, currency)
            except MoneyError:
                fraction = text.partition(".")[2]
                assert not in_schema or fraction.rstrip("0") and len(fraction.rstrip("0")) > EXPONENTS[currency]
            else:
                assert in_schema and Decimal(minor).scaleb(-EXPONENTS[currency]) == Decimal(text)


class TestJsonNumbers:
    """A JSON number is a double on every path; it is read where a double is exact and refused beyond."""

    @pytest.mark.parametrize(("value", "currency", "text", "minor"), [
        (500000000000000.01, "USD", "500000000000000.01", 50000000000000001),
        (12345678901234.567, "KWD", "12345678901234.567", 12345678901234567),
        (10000000000000.0, "USD", "10000000000000.00", 1000000000000000),
        (1000000000000.0, "KWD", "1000000000000.000", 1000000000000000),
    ])
    def test_a_number_a_double_cannot_hold_is_refused_not_rounded(self, value: float, currency: str, text: str,
                                                                   minor: int) -> None:
        """Regression: 500000000000000.01 became ...00 and 12345678901234.567 KWD ...566; both are refused now.

        The same amounts as decimal strings are exact.
        """
        with pytest.raises(MoneyError, match="decimal string"):
            parse_minor(value, currency)
        assert parse_minor(text, currency) == minor

    @given(currencies, st.data())
    def test_every_number_below_the_bound_is_exact(self, currency: str, data: st.DataObject) -> None:
        """Any amount below max_float_major, sent as a JSON number (a double), parses to exactly its minor units."""
        bound = max_float_major(currency) * 10 ** EXPONENTS[currency]
        minor = data.draw(st.one_of(st.integers(-bound + 1, bound - 1), st.sampled_from([bound - 1, 1 - bound])))
        assert parse_minor(float(format_minor(minor, currency)), currency) == minor

    @pytest.mark.parametrize("currency", CURRENCIES)
    def test_bound_leaves_fifteen_significant_digits(self, currency: str) -> None:
        """The bound is where an amount of the currency reaches 16 significant digits (a double holds 15)."""
        assert max_float_major(currency) * 10 ** EXPONENTS[currency] == 10**15
        with pytest.raises(MoneyError):
            parse_minor(float(max_float_major(currency)), currency)


class TestFormatMinor:
    """format_minor writes minor units as a decimal string with exactly the currency's decimals."""

    @pytest.mark.parametrize(
        ("minor", "currency", "expected"),
        [
            (33334, "USD", "333.34"),
            (0, "USD", "0.00"),
            (5, "USD", "0.05"),
            (-5, "USD", "-0.05"),
            (-100, "USD", "-1.00"),
            (99, "EUR", "0.99"),
            (-12345, "GBP", "-123.45"),
            (100000, "JPY", "100000"),
            (0, "JPY", "0"),
            (-7, "KRW", "-7"),
            (7, "KWD", "0.007"),
            (-7, "KWD", "-0.007"),
            (10000, "KWD", "10.000"),
            (3334, "BHD", "3.334"),
            (0, "KWD", "0.000"),
        ],
    )
    def test_examples(self, minor: int, currency: str, expected: str) -> None:
        """Exponents 0, 2 and 3, zero and negatives format with a leading zero and fixed decimals."""
        assert format_minor(minor, currency) == expected

    def test_unknown_currency(self) -> None:
        """Formatting in an unknown currency is a MoneyError."""
        with pytest.raises(MoneyError):
            format_minor(1, "XXX")

    @given(currency_and_minor())
    def test_shape(self, cm: tuple[str, int]) -> None:
        """The output has exactly `exponent` decimals and a sign only when negative."""
        currency, minor = cm
        text = format_minor(minor, currency)
        exp = EXPONENTS[currency]
        assert text.startswith("-") == (minor < 0)
        if exp == 0:
            assert "." not in text
        else:
            whole, frac = text.lstrip("-").split(".")
            assert len(frac) == exp
            assert whole == str(abs(minor) // 10**exp)


class TestRoundTrip:
    """parse_minor inverts format_minor for every currency."""

    @given(currency_and_minor())
    def test_parse_of_format_is_identity(self, cm: tuple[str, int]) -> None:
        """parse_minor(format_minor(m, c), c) == m for every accepted amount in every currency."""
        currency, minor = cm
        assert parse_minor(format_minor(minor, currency), currency) == minor

    @given(currency_and_minor())
    def test_str_and_parse_round_trip_money(self, cm: tuple[str, int]) -> None:
        """Money.parse(str(m), m.currency) == m."""
        currency, minor = cm
        money = Money(minor, currency)
        assert Money.parse(str(money), currency) == money

    @given(currency_and_minor())
    def test_to_decimal_matches_format(self, cm: tuple[str, int]) -> None:
        """to_decimal is the exact value that format_minor writes."""
        currency, minor = cm
        money = Money(minor, currency)
        assert money.to_decimal() == Decimal(format_minor(minor, currency))
        assert money.to_decimal() * 10 ** EXPONENTS[currency] == minor


class TestTotal:
    @given(st.lists(st.integers(-(10**17), 10**17), max_size=20), st.sampled_from(["USD", "JPY", "KWD"]))
    def test_is_the_sum(self, minors: list[int], currency: str) -> None:
        """Money.total is sum() of the amounts from zero, for any amounts of one currency."""
        amounts = [Money(m, currency) for m in minors]
        assert Money.total(iter(amounts), currency) == sum(amounts, Money.zero(currency))

    def test_another_currency_fails_as_sum_does(self) -> None:
        """An amount of another currency is refused by name, as adding it would be."""
        with pytest.raises(MoneyError, match="Cannot combine USD with EUR"):
            Money.total([Money(1, "USD"), Money(2, "EUR")], "USD")
        with pytest.raises(MoneyError, match="Unknown currency"):
            Money.total([], "XXX")


class TestMoneyValue:
    """Money is a frozen, validated value."""

    def test_fields_and_helpers(self) -> None:
        """Money exposes minor, currency, exponent, zero and an exact Decimal."""
        m = Money(33334, "USD")
        assert (m.minor, m.currency, m.exponent) == (33334, "USD", 2)
        assert m.to_decimal() == Decimal("333.34")
        assert Money.zero("KWD") == Money(0, "KWD")
        assert Money(7, "KWD").to_decimal() == Decimal("0.007")

    def test_unknown_currency_refused(self) -> None:
        """Constructing Money in an unknown currency is a MoneyError."""
        with pytest.raises(MoneyError):
            Money(1, "XXX")

    @pytest.mark.parametrize("minor", [1.0, "1", Decimal(1), None, True])
    def test_non_int_minor_refused(self, minor: object) -> None:
        """minor must be an int: a float, string or Decimal is a TypeError."""
        with pytest.raises(TypeError):
            Money(minor, "USD")  # type: ignore[arg-type]

    def test_frozen(self) -> None:
        """Money cannot be mutated in place."""
        m = Money(1, "USD")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            m.minor = 2  # type: ignore[misc]

    def test_equality_and_hash(self) -> None:
        """Equal amounts in the same currency are equal and hash alike; other currencies are unequal."""
        assert Money(100, "USD") == Money(100, "USD")
        assert hash(Money(100, "USD")) == hash(Money(100, "USD"))
        assert Money(100, "USD") != Money(100, "EUR")
        assert Money(100, "USD") != Money(101, "USD")

    @pytest.mark.parametrize(
        ("minor", "currency", "expected"),
        [(33334, "USD", "333.34"), (-5, "USD", "-0.05"), (100000, "JPY", "100000"), (7, "KWD", "0.007")],
    )
    def test_str_formats(self, minor: int, currency: str, expected: str) -> None:
        """str(Money) is the decimal string that crosses every boundary."""
        assert str(Money(minor, currency)) == expected


class TestMoneyArithmetic:
    """Addition, subtraction, negation and ordering stay in one currency."""

    def test_add_sub_neg(self) -> None:
        """+, - and unary - work on minor units and keep the currency."""
        a, b = Money(33334, "USD"), Money(66666, "USD")
        assert a + b == Money(100000, "USD")
        assert a - b == Money(-33332, "USD")
        assert -a == Money(-33334, "USD")
        assert -Money(0, "JPY") == Money(0, "JPY")

    def test_compare(self) -> None:
        """<, <=, >, >= order by minor units."""
        small, big = Money(5, "KWD"), Money(7, "KWD")
        assert small < big and small <= big and big > small and big >= small
        assert not (big < small) and not (big <= small) and not (small > big) and not (small >= big)
        assert small <= Money(5, "KWD") and small >= Money(5, "KWD")
        assert not (small < Money(5, "KWD")) and not (small > Money(5, "KWD"))

    @pytest.mark.parametrize(
        "op",
        [
            lambda a, b: a + b,
            lambda a, b: a - b,
            lambda a, b: a < b,
            lambda a, b: a <= b,
            lambda a, b: a > b,
            lambda a, b: a >= b,
        ],
        ids=["add", "sub", "lt", "le", "gt", "ge"],
    )
    def test_mixing_currencies_raises(self, op) -> None:  # noqa: ANN001
        """Combining or comparing two currencies is a MoneyError naming both, never a conversion."""
        with pytest.raises(MoneyError) as info:
            op(Money(100, "USD"), Money(100, "EUR"))
        assert "USD" in str(info.value) and "EUR" in str(info.value)

    @given(currency_and_minor(), st.integers(min_value=-(10**17), max_value=10**17))
    def test_matches_int_arithmetic(self, cm: tuple[str, int], other: int) -> None:
        """Arithmetic and ordering agree with the integers underneath; a + b - b == a."""
        currency, minor = cm
        a, b = Money(minor, currency), Money(other, currency)
        assert (a + b).minor == minor + other
        assert (a - b).minor == minor - other
        assert a + b - b == a
        negated = -a
        assert negated.minor == -minor
        assert -negated == a
        assert (a < b) == (minor < other)
        assert (a <= b) == (minor <= other)
        assert (a > b) == (minor > other)
        assert (a >= b) == (minor >= other)
        assert (a + b).currency == currency

    @pytest.mark.parametrize(
        "op",
        [lambda a: a + 5, lambda a: a - 5, lambda a: a < 5, lambda a: a >= Decimal(5)],
        ids=["add", "sub", "lt", "ge"],
    )
    def test_non_money_operand_is_type_error(self, op) -> None:  # noqa: ANN001
        """Combining Money with a plain number is a TypeError, as for any unsupported operand."""
        with pytest.raises(TypeError):
            op(Money(500, "USD"))


class TestAllocateCatalogue:
    """The splits in the scenario catalogue (DOMAIN.md items 4, 5 and 6)."""

    def test_usd_1000_into_3(self) -> None:
        """1,000.00 into 3: 333.34 first, or 333.34 last."""
        total = Money(100000, "USD")
        assert [str(m) for m in allocate(total, 3, "first")] == ["333.34", "333.33", "333.33"]
        assert [str(m) for m in allocate(total, 3, "last")] == ["333.33", "333.33", "333.34"]

    def test_default_remainder_is_last(self) -> None:
        """Without a remainder argument the larger parts go last."""
        assert allocate(Money(100000, "USD"), 3) == allocate(Money(100000, "USD"), 3, "last")

    def test_jpy_100000_into_7(self) -> None:
        """¥100,000 into 7: five 14286s then two 14285s (first), mirrored for last; no fractional yen."""
        total = Money(100000, "JPY")
        assert _minors(allocate(total, 7, "first")) == [14286] * 5 + [14285] * 2
        assert _minors(allocate(total, 7, "last")) == [14285] * 2 + [14286] * 5
        assert [str(m) for m in allocate(total, 7, "first")][:1] == ["14286"]

    def test_kwd_10_into_3(self) -> None:
        """KWD 10.000 into 3: 3.334/3.333/3.333 (first)."""
        total = Money(10000, "KWD")
        assert [str(m) for m in allocate(total, 3, "first")] == ["3.334", "3.333", "3.333"]
        assert [str(m) for m in allocate(total, 3, "last")] == ["3.333", "3.333", "3.334"]

    def test_negative_total_mirrors_positive(self) -> None:
        """A negative total splits like its absolute value, negated."""
        assert [str(m) for m in allocate(Money(-100000, "USD"), 3, "first")] == ["-333.34", "-333.33", "-333.33"]

    def test_small_totals(self) -> None:
        """Fewer minor units than parts gives ones and zeros; zero gives all zeros."""
        assert _minors(allocate(Money(2, "USD"), 5, "first")) == [1, 1, 0, 0, 0]
        assert _minors(allocate(Money(2, "USD"), 5, "last")) == [0, 0, 0, 1, 1]
        assert _minors(allocate(Money(0, "USD"), 4)) == [0, 0, 0, 0]

    def test_one_part_is_the_total(self) -> None:
        """Splitting into one part returns the total itself."""
        assert allocate(Money(12345, "EUR"), 1) == [Money(12345, "EUR")]


class TestAllocateProperties:
    """Invariant 5: exact sum, floor/ceil parts, B mod N larger parts together at one end."""

    @settings(deadline=None)
    @given(
        currencies,
        st.integers(min_value=-(10**18), max_value=10**18),
        st.integers(min_value=1, max_value=50),
        remainders,
    )
    def test_even_split_invariant(self, currency: str, total: int, parts: int, remainder: str) -> None:
        """Parts sum exactly, each is ⌊B/N⌋ or ⌈B/N⌉, and |B| mod N larger ones sit at the chosen end."""
        result = allocate(Money(total, currency), parts, remainder)  # type: ignore[arg-type]
        minors = _minors(result)
        assert len(result) == parts
        assert all(m.currency == currency for m in result)
        assert sum(minors) == total
        lo, hi = total // parts, -((-total) // parts)
        assert all(m in (lo, hi) for m in minors)
        assert max(minors) - min(minors) <= 1
        base, extra = divmod(abs(total), parts)
        larger = [i for i, m in enumerate(minors) if abs(m) == base + 1]
        assert len(larger) == extra
        expected = list(range(extra)) if remainder == "first" else list(range(parts - extra, parts))
        assert larger == expected
        assert all((m <= 0) if total < 0 else (m >= 0) for m in minors)

    @given(currencies, st.integers(min_value=-(10**15), max_value=10**15), st.integers(min_value=1, max_value=50))
    def test_first_and_last_are_mirror_images(self, currency: str, total: int, parts: int) -> None:
        """remainder='last' is remainder='first' reversed."""
        first = allocate(Money(total, currency), parts, "first")
        last = allocate(Money(total, currency), parts, "last")
        assert last == first[::-1]

    @given(currencies, st.integers(min_value=0, max_value=10**15), st.integers(min_value=1, max_value=50), remainders)
    def test_negative_is_negated_positive(self, currency: str, total: int, parts: int, remainder: str) -> None:
        """allocate(-B) == [-p for p in allocate(B)]."""
        pos = allocate(Money(total, currency), parts, remainder)  # type: ignore[arg-type]
        neg = allocate(Money(-total, currency), parts, remainder)  # type: ignore[arg-type]
        assert neg == [-p for p in pos]

    @settings(deadline=None)
    @given(
        currencies,
        st.integers(min_value=-(10**12), max_value=10**12),
        st.lists(st.tuples(st.integers(min_value=1, max_value=50), remainders), min_size=1, max_size=10),
    )
    def test_repeated_resplits_keep_the_total(self, currency: str, total: int, splits: list[tuple[int, str]]) -> None:
        """Invariant 7: re-splitting the sum of the parts again and again never walks the total."""
        current = Money(total, currency)
        for parts, remainder in splits:
            pieces = allocate(current, parts, remainder)  # type: ignore[arg-type]
            current = sum(pieces[1:], pieces[0])
            assert current == Money(total, currency)

    @pytest.mark.parametrize("parts", [0, -1, True, False, 1.5, 3.0, "3", None])
    def test_bad_parts(self, parts: object) -> None:
        """parts must be an int >= 1 (not a bool or float); the message shows the value."""
        with pytest.raises(MoneyError) as info:
            allocate(Money(100, "USD"), parts)  # type: ignore[arg-type]
        assert f"parts={parts!r}" in str(info.value)

    @pytest.mark.parametrize("remainder", ["middle", "First", "", None, 0])
    def test_bad_remainder(self, remainder: object) -> None:
        """remainder must be 'first' or 'last'; the message shows the value."""
        with pytest.raises(MoneyError) as info:
            allocate(Money(100, "USD"), 3, remainder)  # type: ignore[arg-type]
        assert f"remainder={remainder!r}" in str(info.value)


ratio_values = st.one_of(
    st.integers(min_value=0, max_value=1000),
    st.fractions(min_value=0, max_value=1000, max_denominator=100),
    st.decimals(min_value=0, max_value=1000, places=3, allow_nan=False, allow_infinity=False),
)


class TestAllocateRatios:
    """Largest-remainder allocation in proportion to ratios."""

    def test_simple_proportions(self) -> None:
        """Ratios [1, 1, 2] of 100.00 give 25.00/25.00/50.00; [1, 2, 3] of 60.00 give 10/20/30."""
        assert [str(m) for m in allocate_ratios(Money(10000, "USD"), [1, 1, 2])] == ["25.00", "25.00", "50.00"]
        assert [str(m) for m in allocate_ratios(Money(6000, "USD"), [1, 2, 3])] == ["10.00", "20.00", "30.00"]
        assert [str(m) for m in allocate_ratios(Money(6000, "USD"), [Fraction(1, 2), Decimal("1.5")])] == [
            "15.00",
            "45.00",
        ]

    def test_largest_remainder_and_ties(self) -> None:
        """Leftover units go to the largest fractional remainders, ties to the earlier part."""
        # 100 * [1,1,1]/3 = 33.33 each: one unit left, tie → first part.
        assert _minors(allocate_ratios(Money(100, "USD"), [1, 1, 1])) == [34, 33, 33]
        # 10 * [1,2]/3 = 3.33, 6.67: the second has the larger remainder.
        assert _minors(allocate_ratios(Money(10, "USD"), [1, 2])) == [3, 7]
        # A zero ratio gets nothing even when units are left over.
        assert _minors(allocate_ratios(Money(10, "USD"), [0, 1, 2])) == [0, 3, 7]

    def test_negative_total(self) -> None:
        """A negative total is split like its absolute value, negated."""
        assert _minors(allocate_ratios(Money(-10, "USD"), [1, 2])) == [-3, -7]

    @settings(deadline=None)
    @given(
        currencies, st.integers(min_value=-(10**15), max_value=10**15), st.lists(ratio_values, min_size=1, max_size=20)
    )
    def test_exact_sum_and_fair_shares(self, currency: str, total: int, ratios: list) -> None:
        """Parts sum exactly; each is within one minor unit of its exact share; zero ratios get zero."""
        weight = sum(Fraction(r) for r in ratios)
        assume(weight > 0)
        result = allocate_ratios(Money(total, currency), ratios)
        minors = _minors(result)
        assert len(result) == len(ratios)
        assert all(m.currency == currency for m in result)
        assert sum(minors) == total
        for m, r in zip(minors, ratios, strict=True):
            share = Fraction(total) * Fraction(r) / weight
            assert abs(m - share) < 1
            assert m in (math.floor(share), math.ceil(share))
            if r == 0:
                assert m == 0

    @given(currencies, st.integers(min_value=-(10**15), max_value=10**15), st.integers(min_value=1, max_value=50))
    def test_equal_ratios_match_allocate_first(self, currency: str, total: int, parts: int) -> None:
        """Equal ratios split exactly like allocate(..., 'first') (ties go to earlier parts)."""
        money = Money(total, currency)
        assert allocate_ratios(money, [1] * parts) == allocate(money, parts, "first")

    @given(
        currencies,
        st.integers(min_value=-(10**12), max_value=10**12),
        st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=20),
        st.integers(min_value=2, max_value=1000),
    )
    def test_scaling_ratios_changes_nothing(self, currency: str, total: int, ratios: list[int], k: int) -> None:
        """Multiplying every ratio by the same factor gives the same split."""
        assume(sum(ratios) > 0)
        money = Money(total, currency)
        assert allocate_ratios(money, ratios) == allocate_ratios(money, [k * r for r in ratios])

    @pytest.mark.parametrize(
        ("ratios", "match"),
        [
            ([], "at least one ratio"),
            ([1, -1, 2], r"ratios\[1\] >= 0"),
            ([0, 0], "positive sum"),
            ([Decimal(0), Fraction(0)], "positive sum"),
            ([1.5], r"ratios\[0\] as int, Decimal or Fraction"),
            ([1, 0.5], r"ratios\[1\] as int, Decimal or Fraction"),
            ([True, 1], r"ratios\[0\]"),
            (["1"], r"ratios\[0\]"),
            ([None], r"ratios\[0\]"),
        ],
    )
    def test_errors(self, ratios: list, match: str) -> None:
        """Empty, negative, all-zero, float, bool or string ratios are a MoneyError naming the bad item."""
        with pytest.raises(MoneyError, match=match):
            allocate_ratios(Money(10000, "USD"), ratios)

    @pytest.mark.parametrize("bad", [Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity")])
    def test_non_finite_decimal_ratio(self, bad: Decimal) -> None:
        """A NaN or infinite Decimal ratio is a MoneyError naming ratios[i]."""
        with pytest.raises(MoneyError, match=r"ratios\[1\]"):
            allocate_ratios(Money(10000, "USD"), [1, bad])


class TestDriftAvoidance:
    """The rounding traps in DOMAIN.md "Rounding and date drift" do not happen with allocate."""

    def test_half_up_per_share_of_100_over_6(self) -> None:
        """Rounding each sixth HALF_UP sums to 100.02; allocate sums to exactly 100.00."""
        total = Decimal("100.00")
        naive = [_half_up(total / 6, 2) for _ in range(6)]
        assert sum(naive) == Decimal("100.02")
        parts = allocate(Money.parse(total, "USD"), 6)
        assert sum(p.to_decimal() for p in parts) == Decimal("100.00")
        assert [str(p) for p in parts] == ["16.66", "16.66", "16.67", "16.67", "16.67", "16.67"]

    def test_rounding_each_third_loses_a_cent(self) -> None:
        """Rounding each third sums to 99.99; allocate sums to 100.00."""
        naive = [_half_up(Decimal("100.00") / 3, 2) for _ in range(3)]
        assert sum(naive) == Decimal("99.99")
        parts = allocate(Money(10000, "USD"), 3)
        assert sum(_minors(parts)) == 10000

    def test_scaling_each_instalment_on_a_premium_change(self) -> None:
        """8 × 83.33 scaled by 783.81/666.64 sums to 783.84; re-allocating the new total sums to 783.81."""
        old = [Money(8333, "USD")] * 8
        old_total, new_total = Decimal("666.64"), Decimal("666.64") + Decimal("117.17")
        naive = [_half_up(m.to_decimal() * new_total / old_total, 2) for m in old]
        assert sum(naive) == Decimal("783.84")
        by_count = allocate(Money.parse(new_total, "USD"), 8)
        by_ratio = allocate_ratios(Money.parse(new_total, "USD"), [m.minor for m in old])
        assert sum(_minors(by_count)) == 78381
        assert sum(_minors(by_ratio)) == 78381

    def test_resplitting_a_rounded_balance_does_not_walk(self) -> None:
        """Naive re-splits walk 1000.00 → 999.99 → …; allocate keeps 1000.00 through every re-split."""
        naive_total = Decimal("1000.00")
        money = Money(100000, "USD")
        seen = []
        for parts in (3, 7, 6, 9, 11):
            naive_total = _half_up(naive_total / parts, 2) * parts
            seen.append(naive_total)
            pieces = allocate(money, parts)
            money = sum(pieces[1:], pieces[0])
            assert money == Money(100000, "USD")
        assert any(t != Decimal("1000.00") for t in seen)  # the trap is real

    def test_float_rounding_trap_is_refused_not_rounded(self) -> None:
        """round(2.675, 2) == 2.67 in floats; parse_minor refuses 2.675 USD instead of rounding either way."""
        assert round(2.675, 2) == 2.67
        with pytest.raises(MoneyError):
            parse_minor(2.675, "USD")
        assert parse_minor(2.67, "USD") == 267

    def test_decimal_division_trap(self) -> None:
        """Decimal('100') / 3 * 3 != 100, while allocate into 3 sums back to exactly 100."""
        assert Decimal("100") / 3 * 3 != Decimal("100")
        parts = allocate(Money(100, "JPY"), 3)
        assert sum(_minors(parts)) == 100
