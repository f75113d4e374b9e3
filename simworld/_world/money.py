"""Exact money: integer minor units plus the currency's ISO 4217 exponent.

Amounts cross every boundary (tool arguments, results, snapshots, reports) as
decimal strings such as ``"333.34"``. Parsing never rounds: more decimals than the
currency has is an error. Allocation splits a total into parts that sum to it
exactly, to the minor unit.
"""

from __future__ import annotations

import decimal
import functools
import math
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Literal

import attrs

from simworld.errors import MoneyError

__all__ = [
    "AMOUNT_PATTERN",
    "EXPONENTS",
    "MAX_EXPONENT",
    "MAX_MAJOR_DIGITS",
    "Money",
    "Remainder",
    "allocate",
    "allocate_ratios",
    "convert",
    "exponent",
    "format_minor",
    "max_float_major",
    "max_minor",
    "parse_minor",
]

#: ISO 4217 minor-unit exponents of the currencies simworld knows.
EXPONENTS: dict[str, int] = {
    "USD": 2,
    "EUR": 2,
    "GBP": 2,
    "CHF": 2,
    "JPY": 0,
    "KRW": 0,
    "KWD": 3,
    "BHD": 3,
    "JOD": 3,
    "OMR": 3,
    "TND": 3,
}

#: Amounts with more integer digits than this are refused as absurd.
MAX_MAJOR_DIGITS = 15
#: The most decimals any known currency has.
MAX_EXPONENT = max(EXPONENTS.values())

#: The language of an amount as text, published as the ``pattern`` of every amount in the
#: tools' JSON schemas and accepted by :func:`parse_minor`, exactly: an optional minus, 1 to
#: ``MAX_MAJOR_DIGITS`` ASCII digits, and optionally a point and 1 to ``MAX_EXPONENT`` digits.
#: No plus sign, exponent, bare point, grouping or surrounding space. Read with JSON Schema's
#: (ECMA-262) semantics: ``$`` is the end of the text, so :func:`parse_minor` uses ``fullmatch``.
AMOUNT_PATTERN = rf"^-?[0-9]{{1,{MAX_MAJOR_DIGITS}}}(\.[0-9]{{1,{MAX_EXPONENT}}})?$"

Remainder = Literal["first", "last"]

_AMOUNT_TEXT = re.compile(AMOUNT_PATTERN, re.ASCII)
# The same shape without the size limits, to say which limit a plain decimal string broke.
_DIGITS_TEXT = re.compile(r"-?([0-9]+)(?:\.([0-9]+))?", re.ASCII)

# Parsing context: enough precision for any amount we accept, and traps so that
# nothing is ever rounded behind our back.
_CONTEXT = decimal.Context(prec=MAX_MAJOR_DIGITS + 10, traps=[decimal.Inexact, decimal.InvalidOperation])


def exponent(currency: str) -> int:
    """Return the ISO 4217 exponent of ``currency`` (``"JPY"`` → 0, ``"KWD"`` → 3)."""
    try:
        return EXPONENTS[currency]
    except (KeyError, TypeError):
        known = ", ".join(sorted(EXPONENTS))
        raise MoneyError(f"Unknown currency {currency!r}; expected one of {known}.") from None


def max_minor(currency: str) -> int:
    """The largest number of minor units of ``currency`` an amount may have (15 integer digits)."""
    return 10 ** (MAX_MAJOR_DIGITS + exponent(currency)) - 1


def max_float_major(currency: str) -> int:
    """JSON numbers (floats) of ``currency`` must be below this many major units to be read.

    Below it, every amount of the currency has at most 15 significant digits, which an
    IEEE double holds exactly, so the float's shortest text is the number that was written.
    """
    return 10 ** (MAX_MAJOR_DIGITS - exponent(currency))


def parse_minor(value: object, currency: str, *, name: str = "amount") -> int:
    """Parse ``value`` into an integer number of minor units of ``currency``. Never rounds.

    Accepts:

    - a string in the language of :data:`AMOUNT_PATTERN` (``"333.34"``, ``"-5"``), the
      pattern the tools' schemas publish, and nothing else;
    - an ``int``, a whole number of major units (a JSON integer);
    - a ``float`` (how a JSON number with a fraction or an exponent arrives from every
      transport, and what a Python agent's float is), read through its shortest decimal
      text (``333.34`` → ``"333.34"``), below :func:`max_float_major` only: there the text
      is the number that was written; above it a double may already have lost digits
      (``500000000000000.01`` arrives as ``500000000000000.0``), so it is refused, asking
      for a decimal string;
    - a finite ``Decimal``, exactly.

    Raises:
        MoneyError: on a bool, NaN, an infinity, a string outside the pattern, more
            decimals than the currency has, more than ``MAX_MAJOR_DIGITS`` integer
            digits, a float too large to be exact, or any other type.
    """
    exp = exponent(currency)
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise MoneyError(
            f"Expected {name} as a decimal string such as '12.34' but got {name}={value!r} "
            f"(type={type(value).__name__})."
        )
    absurd = MoneyError(f"Amount {name}={_shown(value)} is absurdly large; at most {MAX_MAJOR_DIGITS} integer "
                        "digits are accepted.")
    if isinstance(value, str):
        if not _AMOUNT_TEXT.fullmatch(value):
            digits = _DIGITS_TEXT.fullmatch(value)
            if digits is not None and len(digits.group(1)) > MAX_MAJOR_DIGITS:
                raise absurd
            if digits is not None:  # only the decimals are too many, more than any currency has
                raise MoneyError(f"Amount {name}={value!r} has more decimals than {currency} allows ({exp}); "
                                 "round it yourself, once, before sending it.")
            raise MoneyError(f"Expected {name} as a decimal string such as '12.34' (an optional minus, digits, and "
                             f"at most {MAX_EXPONENT} decimals after a point; no plus sign, exponent or spaces) "
                             f"but got {name}={value!r}.")
        amount = Decimal(value)
    elif isinstance(value, int):
        if abs(value) >= 10**MAX_MAJOR_DIGITS:  # compared before str(), which refuses past 4300 digits
            raise absurd
        amount = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise MoneyError(f"Expected a finite {name} but got {name}={value!r}.")
        amount = Decimal(repr(value))
        if abs(amount) >= max_float_major(currency):
            if amount and amount.adjusted() >= MAX_MAJOR_DIGITS:
                raise absurd
            raise MoneyError(
                f"Amount {name}={value!r} arrived as a JSON number too large to be exact: a double holds 15 "
                f"significant digits, so {currency} numbers must be below {max_float_major(currency)}; "
                "send the amount as a decimal string such as '12.34'."
            )
    else:
        amount = value
        if not amount.is_finite():
            raise MoneyError(f"Expected a finite {name} but got {name}={value!r}.")
    if amount and amount.adjusted() >= MAX_MAJOR_DIGITS:
        raise absurd
    try:
        minor = _CONTEXT.multiply(amount, Decimal(10) ** exp)
        integral = _CONTEXT.to_integral_exact(minor)
    except (decimal.Inexact, decimal.InvalidOperation):
        raise MoneyError(
            f"Amount {name}={value!r} has more decimals than {currency} allows ({exp}); "
            "round it yourself, once, before sending it."
        ) from None
    if integral != minor:  # pragma: no cover - to_integral_exact traps first
        raise MoneyError(f"Amount {name}={value!r} has more decimals than {currency} allows ({exp}).")
    return int(integral)


def _shown(value: object) -> str:
    """``repr(value)``, except for an integer too long to show (``repr`` refuses past 4300 digits)."""
    if isinstance(value, int) and abs(value) >= 10**40:
        return f"<an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits>"
    return repr(value)


@functools.lru_cache(maxsize=1 << 14)  # amounts repeat: a plan's instalments, their sums, across episodes
def format_minor(minor: int, currency: str) -> str:
    """Format ``minor`` units of ``currency`` as a decimal string (``33334`` → ``"333.34"``)."""
    exp = exponent(currency)
    sign = "-" if minor < 0 else ""
    digits = str(abs(minor))
    if exp == 0:
        return sign + digits
    digits = digits.rjust(exp + 1, "0")
    return f"{sign}{digits[:-exp]}.{digits[-exp:]}"


@attrs.frozen(order=False)
class Money:
    """An exact amount: ``minor`` units of ``currency``.

    Arithmetic and comparison between two currencies is an error, never a
    conversion.
    """

    minor: int = attrs.field()
    currency: str = attrs.field()

    @minor.validator
    def _check_minor(self, _attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"Expected minor as an int but got minor={value!r} (type={type(value).__name__}).")

    @currency.validator
    def _check_currency(self, _attribute: attrs.Attribute[str], value: str) -> None:
        exponent(value)

    @classmethod
    def parse(cls, value: object, currency: str, *, name: str = "amount") -> Money:
        """Parse a decimal string or JSON number; see :func:`parse_minor`."""
        return cls(parse_minor(value, currency, name=name), currency)

    @classmethod
    def zero(cls, currency: str) -> Money:
        """Return zero in ``currency`` (one shared value per currency: Money is immutable)."""
        held = _ZEROS.get(currency) if type(currency) is str else None
        if held is None or cls is not Money:
            held = cls(0, currency)
            if cls is Money:
                _ZEROS[currency] = held
        return held

    @classmethod
    def total(cls, amounts: Iterable[Money], currency: str) -> Money:
        """The sum of ``amounts`` in ``currency``: ``sum(amounts, Money.zero(currency))``, in one pass over their
        minor units when every amount is a Money of ``currency`` (else that sum, which says what is wrong)."""
        zero = cls.zero(currency)
        listed = list(amounts)
        minor = 0
        for amount in listed:
            if type(amount) is not Money or amount.currency != currency:
                return sum(listed, zero)
            minor += amount.minor
        return _checked(minor, currency) if listed else zero

    @property
    def exponent(self) -> int:
        """The currency's ISO 4217 exponent."""
        return exponent(self.currency)

    def to_decimal(self) -> Decimal:
        """Return the exact ``Decimal`` value (``Decimal('333.34')``)."""
        return Decimal(self.minor).scaleb(-self.exponent)

    def __str__(self) -> str:
        return format_minor(self.minor, self.currency)

    def _same(self, other: object) -> Money:
        if not isinstance(other, Money):
            raise TypeError(f"Cannot combine Money with {other!r} (type={type(other).__name__}); use Money.parse.")
        if other.currency != self.currency:
            raise MoneyError(f"Cannot combine {self.currency} with {other.currency}; convert explicitly first.")
        return other

    def __add__(self, other: Money) -> Money:
        o = self._same(other)
        return _checked(self.minor + o.minor, self.currency)

    def __sub__(self, other: Money) -> Money:
        o = self._same(other)
        return _checked(self.minor - o.minor, self.currency)

    def __neg__(self) -> Money:
        return _checked(-self.minor, self.currency)

    def __lt__(self, other: Money) -> bool:
        return self.minor < self._same(other).minor

    def __le__(self, other: Money) -> bool:
        return self.minor <= self._same(other).minor

    def __gt__(self, other: Money) -> bool:
        return self.minor > self._same(other).minor

    def __ge__(self, other: Money) -> bool:
        return self.minor >= self._same(other).minor


#: Money.zero's values, by currency (each checked once, when first made).
_ZEROS: dict[str, Money] = {}

_bare = object.__new__
_put = object.__setattr__


def _checked(minor: int, currency: str) -> Money:
    """``Money(minor, currency)`` for values already known good (the sum of two amounts of one currency):
    arithmetic makes most amounts, and the validators would only check again what its inputs passed."""
    m = _bare(Money)
    _put(m, "minor", minor)
    _put(m, "currency", currency)
    return m


def allocate(total: Money, parts: int, remainder: Remainder = "last") -> list[Money]:
    """Split ``total`` into ``parts`` amounts that differ by at most one minor unit.

    Every part is ⌊B/N⌋ or ⌈B/N⌉ minor units; the ``B mod N`` larger parts sit
    together at the start (``remainder="first"``) or at the end (``"last"``). The
    parts sum to ``total`` exactly. A negative total splits like its absolute value,
    negated.

    >>> [str(m) for m in allocate(Money(100000, "USD"), 3, "first")]
    ['333.34', '333.33', '333.33']
    """
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise MoneyError(f"Expected parts as an int >= 1 but got parts={parts!r}.")
    if remainder not in ("first", "last"):
        raise MoneyError(f"Expected remainder='first' or 'last' but got remainder={remainder!r}.")
    sign = -1 if total.minor < 0 else 1
    base, extra = divmod(abs(total.minor), parts)
    sizes = [base] * parts
    indices = range(extra) if remainder == "first" else range(parts - extra, parts)
    for i in indices:
        sizes[i] += 1
    currency = total.currency
    return [_checked(sign * s, currency) for s in sizes]  # ints of a currency ``total`` already has


def allocate_ratios(total: Money, ratios: Sequence[int | Decimal | Fraction]) -> list[Money]:
    """Split ``total`` in proportion to ``ratios`` by the largest-remainder method.

    Each part first gets the floor of its exact share; the minor units left over
    go one each to the parts with the largest fractional remainders, ties to the
    earlier part. The parts sum to ``total`` exactly.
    """
    if not ratios:
        raise MoneyError("Expected at least one ratio but got ratios=[].")
    shares = []
    for i, r in enumerate(ratios):
        if isinstance(r, bool) or not isinstance(r, (int, Decimal, Fraction)):
            raise MoneyError(f"Expected ratios[{i}] as int, Decimal or Fraction but got {r!r} "
                             f"(type={type(r).__name__}).")
        if isinstance(r, Decimal) and not r.is_finite():
            raise MoneyError(f"Expected ratios[{i}] as a finite number but got {r!r}.")
        f = Fraction(r)
        if f < 0:
            raise MoneyError(f"Expected ratios[{i}] >= 0 but got {r!r}.")
        shares.append(f)
    weight = sum(shares)
    if weight == 0:
        raise MoneyError(f"Expected ratios with a positive sum but got ratios={list(ratios)!r}.")
    sign = -1 if total.minor < 0 else 1
    amount = abs(total.minor)
    exact = [amount * s / weight for s in shares]
    floors = [int(e) for e in exact]  # exact >= 0, so int() is floor
    left = amount - sum(floors)
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [Money(sign * f, total.currency) for f in floors]


def convert(amount: Money, currency: str, rates: dict[str, Decimal]) -> Money:
    """Convert ``amount`` into ``currency`` by ``rates`` (units per reference unit), rounding once.

    Used to state one policy limit in every currency and to move a world between
    currencies when it is perturbed; never inside an agent's arithmetic. Rounds
    half to even, once, at the target currency's exponent.
    """
    for code in (amount.currency, currency):
        if code not in rates:
            raise MoneyError(f"No rate for {code!r}; rates are known for {sorted(rates)!r}.")
    major = amount.to_decimal() / rates[amount.currency] * rates[currency]
    exp = exponent(currency)
    quantised = major.quantize(Decimal(1).scaleb(-exp), rounding=decimal.ROUND_HALF_EVEN)
    return Money(int(quantised.scaleb(exp)), currency)
