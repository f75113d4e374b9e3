"""Perturbation: the same scenario with other amounts, dates and currencies.

A scenario's ``perturb`` block says what may vary about its target policy and
plan, inside the space where the scenario's correct outcome still holds (the
scenario's author chooses that space)::

    "perturb": {"currencies": ["USD", "JPY", "KWD"], "premium_jitter": "0.15",
                "anchor_days": [1, 28, 29, 30, 31], "year_shifts": [-2, 0, 2]}

Only the target's records change, written as an overlay over the shared
snapshot. The perturbation then yields the template variables (``{currency}``,
``{unpaid_balance}``, …) that the prompt and the solutions are rendered with,
and the scenario's ``params``.

Every choice goes through a :class:`Draws` object, and every draw is recorded as a
*world parameter*, so a world has two spellings: a seed (:class:`RandomDraws`, the
seeded generator ``simworld run --seed N`` has always used) and its parameters
(:class:`WorldDraws`, a dict such as ``{"year_shift": 0, "anchor_day": 1, "currency":
"USD", "jitter": 0, "extra_units": 1, "params": {}}``). A seed's world is turned into
its parameters by reading :attr:`Perturbed.world`, and those parameters give the
same world back. Seeds are the way to sample; parameters are the way to pin a world
and to shrink it (``simworld probe`` draws them with hypothesis).

The world parameters, in draw order (only those the scenario varies are drawn):

=============== ===================================================================
``year_shift``  years every date moves by, from ``perturb.year_shifts``
``anchor_day``  the plan's anchor day, from ``perturb.anchor_days``
``currency``    the plan's currency, from ``perturb.currencies``
``jitter``      the premium is scaled by 1 + premium_jitter × jitter / 1000
                (-1000..1000; drawn when ``premium_jitter`` is set)
``extra_units`` minor units added to the scaled premium so it does not divide evenly
                into the instalments (0..N-1, at least 0..1; with ``jitter``)
``params``      the scenario's ``params`` by name: a ``choice`` value, an ``int``, or a
                ``money`` amount as a decimal string in the world's currency
=============== ===================================================================

Each choice is also ordered from simplest to most awkward, the direction hypothesis
shrinks in (towards the first of a sampled list, towards 0 for integers): currencies
USD first, then the other 2-decimal ones, then 0-decimal, then 3-decimal ones (ties in
the order listed); year shifts 0, 1, -1, 2, -2, ...; anchor days nearest the plan's own
first (ties in the order listed); ``jitter`` and ``extra_units`` towards 0 (no jitter,
no awkward remainder); ``choice`` params towards the first listed, ``int`` and
``money`` params towards the value nearest zero (the smallest amount). The seeded
generator ignores this order, so seed ``N`` gives the world it always gave.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import attrs
import orjson

from simworld._world.dates import days_in_month, due_date, roll, shift_years
from simworld._world.files import MAX_SCENARIO_FILE_BYTES, read_bounded
from simworld._world.hashing import blake2b
from simworld._world.models import LOCKED, UNPAID, Instalment, Plan, Policy, remade
from simworld._world.money import Money, allocate, exponent
from simworld._world.policy import PolicyStore
from simworld._world.splits import HOLDOUT_BASE
from simworld._world.state import State, canonical_bytes
from simworld.errors import MoneyError, ScenarioError

__all__ = ["PARAM_KINDS", "PERTURB_KEYS", "WORLD_FILE_KEYS", "WORLD_KEYS", "Draws", "Perturbed", "RandomDraws",
           "WorldDraws", "WorldFile", "perturb", "read_world_file", "world_file_bytes", "world_id", "world_vars"]

PERTURB_KEYS = ("currencies", "premium_jitter", "anchor_days", "year_shifts")
PARAM_KINDS = ("choice", "int", "money", "sum")
#: The world parameters, in the order they are drawn.
WORLD_KEYS = ("year_shift", "anchor_day", "currency", "jitter", "extra_units", "params")
#: The keys of a world file (``simworld run --world FILE``); ``seed`` is optional.
WORLD_FILE_KEYS = ("scenario", "seed", "world")

T = TypeVar("T")


@attrs.frozen(eq=False)
class Perturbed:
    """The perturbed initial state, clock, the variables templates are rendered with, and the world's parameters."""

    state: State
    clock: datetime
    vars: dict[str, Any]
    world: dict[str, Any] = attrs.field(factory=dict)
    #: The tool calls played from this start so far, kept for the next world that makes the same call on the
    #: same state (see :class:`simworld._world.world.World`).
    calls: dict[Any, Any] = attrs.field(factory=dict, repr=False)


class Draws:
    """Where every choice of a perturbation comes from; each draw is recorded in :attr:`world`.

    ``name`` is the world parameter's name (``currency``, or ``params.NAME`` for a
    scenario param). Subclasses supply the value; ``simpler`` is a sort key (smaller is
    simpler) that a shrinking source orders the options by.
    """

    def __init__(self) -> None:
        self.world: dict[str, Any] = {}

    def choice(self, name: str, options: Sequence[T], simpler: Callable[[T], Any] | None = None) -> T:
        """One of ``options``."""
        value = self._choice(name, list(options), simpler)
        self._note(name, value)
        return value

    def integer(self, name: str, lo: int, hi: int) -> int:
        """An integer in ``lo..hi`` (inclusive); the simplest is the one nearest 0."""
        value = self._integer(name, lo, hi)
        self._note(name, value)
        return value

    def money(self, name: str, lo: Money, hi: Money) -> Money:
        """An amount in ``lo..hi`` (inclusive, one currency), recorded as its decimal string."""
        value = self._money(name, lo, hi)
        self._note(name, str(value))
        return value

    def _choice(self, name: str, options: list[T], simpler: Callable[[T], Any] | None) -> T:
        raise NotImplementedError

    def _integer(self, name: str, lo: int, hi: int) -> int:
        raise NotImplementedError

    def _money(self, name: str, lo: Money, hi: Money) -> Money:
        return Money(self._integer(name, lo.minor, hi.minor), lo.currency)

    def _note(self, name: str, value: Any) -> None:
        group, _, key = name.partition(".")
        if key:
            self.world.setdefault(group, {})[key] = value
        else:
            self.world[name] = value


class RandomDraws(Draws):
    """Draws from a seeded ``random.Random``: exactly the calls a seed has always made, so its world never changes."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng

    def _choice(self, name: str, options: list[T], simpler: Callable[[T], Any] | None) -> T:
        return self.rng.choice(options)

    def _integer(self, name: str, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class WorldDraws(Draws):
    """Draws read from explicit world parameters; a value the scenario does not allow is a ScenarioError.

    Call :meth:`finish` after the perturbation to refuse parameters it never drew.
    """

    def __init__(self, world: Mapping[str, Any]) -> None:
        super().__init__()
        if not isinstance(world, Mapping):
            raise ScenarioError(f"Expected the world as a JSON object of parameters but got {world!r} "
                                f"(type={type(world).__name__}).")
        self.given = world

    def _given(self, name: str) -> Any:
        group, _, key = name.partition(".")
        scope: Any = self.given
        if key:
            scope = scope.get(group, {})
            if not isinstance(scope, Mapping):
                raise ScenarioError(f"world.{group}={scope!r} must be an object of the scenario's params.")
        else:
            key = name
        if key not in scope:
            raise ScenarioError(f"world lacks {name!r}; this scenario draws it, so give it a value.")
        return scope[key]

    def _choice(self, name: str, options: list[T], simpler: Callable[[T], Any] | None) -> T:
        value = self._given(name)
        for option in options:
            if type(option) is type(value) and option == value:
                return option
        raise ScenarioError(f"world.{name}={value!r} is not one this scenario allows; expected one of {options!r}.")

    def _integer(self, name: str, lo: int, hi: int) -> int:
        value = self._given(name)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ScenarioError(f"world.{name}={value!r} is out of range; expected an integer from {lo} to {hi}.")
        return value

    def _money(self, name: str, lo: Money, hi: Money) -> Money:
        value = self._given(name)
        shown = f"an amount from {lo} to {hi} {lo.currency} as a decimal string such as {str(lo)!r}"
        if not isinstance(value, str):
            raise ScenarioError(f"world.{name}={value!r} (type={type(value).__name__}); expected {shown}.")
        try:
            amount = Money.parse(value, lo.currency, name=f"world.{name}")
        except MoneyError:
            raise ScenarioError(f"world.{name}={value!r} is not an amount in {lo.currency} ({exponent(lo.currency)} "
                                f"decimals); expected {shown}.") from None
        if not lo.minor <= amount.minor <= hi.minor:
            raise ScenarioError(f"world.{name}={value!r} is out of range; expected {shown}.")
        return amount

    def finish(self) -> None:
        """Refuse any parameter the perturbation did not draw (a typo, or a key another scenario has)."""
        drawn = [k for k in self.world if k != "params"] + [f"params.{k}" for k in self.world.get("params", {})]
        given = [k for k in self.given if k != "params"]
        params = self.given.get("params", {})
        if not isinstance(params, Mapping):
            raise ScenarioError(f"world.params={params!r} must be an object of the scenario's params.")
        given += [f"params.{k}" for k in params]
        unknown = [k for k in given if k not in drawn]
        if unknown:
            raise ScenarioError(f"world has unknown parameter(s) {unknown!r}; this scenario draws: "
                                f"{', '.join(drawn) or 'nothing'}.")


def _currency_rank(code: str) -> tuple[bool, int]:
    """USD first, then other 2-decimal currencies, then 0-decimal, then 3-decimal."""
    return code != "USD", {2: 0, 0: 1, 3: 2}.get(exponent(code), 3)


def _shift_rank(years: int) -> tuple[int, bool]:
    """0, then 1, -1, 2, -2, ...: the nearest year first."""
    return abs(years), years < 0


def _shift_clock(clock: datetime, years: int) -> datetime:
    year = clock.year + years
    return clock.replace(year=year, day=min(clock.day, days_in_month(year, clock.month)))


def perturb(state: State, clock: datetime, policy_store: PolicyStore, target: dict[str, str],
            spec: dict[str, Any], params: dict[str, Any], draws: Draws) -> Perturbed:
    """Apply ``spec`` to the target's records with ``draws``; draw ``params``; return the result.

    With :class:`WorldDraws`, a parameter the perturbation never drew is refused.
    """
    policy: Policy = state.get("policies", target["policy"])
    plan: Plan = state.get("plans", target["plan"])
    fees = state.children("fees", "plan_id", plan.id)
    payments = state.children("payments", "plan_id", plan.id)

    years = draws.choice("year_shift", spec["year_shifts"], _shift_rank) if spec.get("year_shifts") else 0
    anchor = draws.choice("anchor_day", spec["anchor_days"], lambda d: abs(d - plan.anchor_day)) \
        if spec.get("anchor_days") else plan.anchor_day
    currency = draws.choice("currency", spec["currencies"], _currency_rank) if spec.get("currencies") \
        else plan.currency
    jitter = Decimal(spec.get("premium_jitter", "0"))

    premium = policy_store.convert(policy.annual_premium, currency) if currency != plan.currency else (
        policy.annual_premium)
    if jitter:
        factor = Decimal(1) + jitter * Decimal(draws.integer("jitter", -1000, 1000)) / Decimal(1000)
        scaled = int(Decimal(premium.minor) * factor)
        # Awkward minor units: make the total indivisible by the instalment count where possible.
        scaled += draws.integer("extra_units", 0, max(1, len(plan.instalments) - 1))
        premium = Money(max(scaled, len(plan.instalments)), currency)

    if jitter or currency != plan.currency:
        amounts = allocate(premium, len(plan.instalments), "first" if plan.remainder == "first" else "last")
    else:
        amounts = [i.amount for i in plan.instalments]
    zero = Money.zero(currency)
    instalments = []
    for inst, amount in zip(plan.instalments, amounts, strict=True):
        due, draft = _due_and_draft(inst.due_date.year + years, inst.due_date.month, anchor)
        status = inst.status
        if status == "paid":
            paid_amount = amount
        elif status == "partially_paid":
            paid_amount = Money(amount.minor // 2, currency)
        else:
            paid_amount = zero
        # Built directly, not by attrs.evolve (the same record, at a fraction of the cost: a plan has a dozen).
        instalments.append(Instalment(inst.id, inst.seq, due, amount, paid_amount, status, draft))
    paid_by_seq = {i.seq: i.paid_amount for i in instalments}
    term_start = _real(shift_years(policy.term_start, years))
    if policy.term_end + timedelta(days=1) == shift_years(policy.term_start, 1):
        # An annual term ends the day before its anniversary, leap day or not.
        term_end = _real(shift_years(term_start, 1) - timedelta(days=1))
    else:
        term_end = _real(shift_years(policy.term_end, years))
    changed = [remade(policy, currency=currency, annual_premium=premium, term_start=term_start, term_end=term_end),
               remade(plan, currency=currency, anchor_day=anchor, instalments=tuple(instalments))]
    for fee in fees:
        amount = policy_store.convert(fee.amount, currency) if currency != fee.currency else fee.amount
        waived = _real(shift_years(fee.waived_on, years)) if fee.waived_on is not None else None
        changed.append(remade(fee, currency=currency, amount=amount, waived_on=waived,
                               charged_on=_real(shift_years(fee.charged_on, years))))
    for pay in payments:
        allocs = tuple([(seq, paid_by_seq.get(seq, zero)) for seq, _ in pay.allocations])
        total = Money(sum([a.minor for _, a in allocs]), currency)  # the sum of the amounts, added in minor units
        changed.append(remade(pay, currency=currency, amount=total, allocations=allocs,
                               received_on=_real(shift_years(pay.received_on, years))))
    state = state.put_all(changed)
    clock = _shift_clock(clock, years)
    values = world_vars(state, target, clock)
    values.update(draw_params(params, values, policy_store, currency, draws))
    if isinstance(draws, WorldDraws):
        draws.finish()
    return Perturbed(state, clock, values, draws.world)


#: The real date class, held in a tuple: while a run's TimeGuard runs, freezegun swaps every module's ``date`` (the
#: helpers' in dates.py too) for its FakeDate, but never looks inside containers.
_REAL_DATE = (date,)


def _real(day: date) -> date:
    """``day`` as a real date. A start's records hold real dates whether or not freezegun runs: a FakeDate's
    arithmetic is Python code, and a record's fast encoding takes real dates only (its digest, the same bytes either
    way, would cost several times more)."""
    real_date = _REAL_DATE[0]
    return day if type(day) is real_date else real_date(day.year, day.month, day.day)


@functools.lru_cache(maxsize=4096)  # calendar facts, as days_in_month keeps them: a few centuries of months
def _due_and_draft(year: int, month: int, anchor: int) -> tuple[date, date]:
    """An instalment's due date in (year, month) for ``anchor``, and its draft date (the business day it is
    collected on), both real dates."""
    due = _real(due_date(year, month, anchor))
    return due, _real(roll(due, "following"))


def world_vars(state: State, target: dict[str, str], clock: datetime) -> dict[str, Any]:
    """The template variables read off the target's records."""
    customer = state.get("customers", target["customer"])
    policy = state.get("policies", target["policy"])
    plan = state.get("plans", target["plan"])
    owed = [i for i in plan.instalments if i.status in UNPAID]
    locked = [i for i in plan.instalments if i.status in LOCKED]
    balance = Money(sum([i.amount.minor for i in owed]), plan.currency)  # an instalment is in its plan's currency
    values: dict[str, Any] = {
        "customer_id": customer.id,
        "customer_name": customer.name,
        "first_name": customer.name.split()[0],
        "email": customer.email,
        "policy_id": policy.id,
        "plan_id": plan.id,
        "currency": plan.currency,
        "annual_premium": str(policy.annual_premium),
        "term_start": policy.term_start.isoformat(),
        "term_end": policy.term_end.isoformat(),
        "anchor_day": plan.anchor_day,
        "unpaid_balance": str(balance),
        "unpaid_count": len(owed),
        "next_due_date": owed[0].due_date.isoformat() if owed else "",
        "next_seq": owed[0].seq if owed else 0,
        "next_amount": str(owed[0].amount) if owed else "",
        "today": clock.date().isoformat(),
    }
    if locked:
        values["paid_seq"] = locked[-1].seq
        values["paid_due_date"] = locked[-1].due_date.isoformat()
        values["paid_amount"] = str(locked[-1].amount)
    fee_id = target.get("fee")
    if fee_id:
        fee = state.get("fees", fee_id)
        values["fee_id"] = fee.id
        values["fee_amount"] = str(fee.amount)
    return values


def draw_params(params: dict[str, Any], values: dict[str, Any], store: PolicyStore, currency: str,
                draws: Draws) -> dict[str, Any]:
    """Draw the scenario's ``params`` in declaration order; later ones may use earlier ones (``sum`` draws none)."""
    out: dict[str, Any] = {}
    for name, spec in params.items():
        (kind, arg), = spec.items()
        if kind == "choice":
            out[name] = draws.choice(f"params.{name}", arg)
        elif kind == "int":
            out[name] = draws.integer(f"params.{name}", arg[0], arg[1])
        elif kind == "money":
            lo = store.convert(Money.parse(arg[0], store.reference_currency), currency)
            hi = store.convert(Money.parse(arg[1], store.reference_currency), currency)
            out[name] = str(draws.money(f"params.{name}", lo, hi))
        elif kind == "sum":
            scope = {**values, **out}
            try:
                parts = [Money.parse(scope[v], currency) for v in arg]
            except KeyError as exc:
                raise ScenarioError(f"param {name!r}: unknown variable {exc.args[0]!r} in 'sum'.") from None
            out[name] = str(sum(parts, Money.zero(currency)))
    return out


def world_id(scenario_id: str, world: Mapping[str, Any]) -> int:
    """A stable dev-range number naming ``world`` of a scenario: the seed a run at explicit parameters reports.

    It is derived from the parameters (not a seed that gives this world): two runs of the
    same world file report the same number, and its result line's ``world`` field says
    which world it was.
    """
    digest = blake2b(canonical_bytes({"scenario": scenario_id, "world": world}), digest_size=8).digest()
    return int.from_bytes(digest, "big") % HOLDOUT_BASE


@attrs.frozen
class WorldFile:
    """A world file: the scenario, its world parameters and, if they came from one, the seed that gives them."""

    scenario: str
    world: dict[str, Any]
    seed: int | None = None


def world_file_bytes(scenario_id: str, world: Mapping[str, Any], seed: int | None = None) -> bytes:
    """A world file's bytes: ``{"scenario": ID, "seed": N, "world": {...}}``, indented, parameters in draw order."""
    data: dict[str, Any] = {"scenario": scenario_id}
    if seed is not None:
        data["seed"] = seed
    data["world"] = dict(world)
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def read_world_file(path: Path) -> WorldFile:
    """Read a world file's shape; its parameters are checked against the scenario when it is pinned.

    Raises:
        ScenarioError: naming the file, when it cannot be read, is not JSON or is not
            ``{"scenario": ID, "world": {...}}`` (with an optional ``"seed": N``).
    """
    try:
        data = orjson.loads(read_bounded(path, MAX_SCENARIO_FILE_BYTES, ScenarioError, "a world file"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read this world file ({exc.strerror or exc}); check the path.") from None
    except orjson.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: not valid JSON ({exc}); a world file is "
                            '{"scenario": ID, "world": {...}}, as simworld probe writes it.') from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a JSON object {{\"scenario\": ID, \"world\": {{...}}}} but got "
                            f"{type(data).__name__}.")
    unknown = sorted(set(data) - set(WORLD_FILE_KEYS))
    if unknown:
        raise ScenarioError(f"{path}: unknown key(s) {unknown!r}; allowed: {', '.join(WORLD_FILE_KEYS)}.")
    scenario, world, seed = data.get("scenario"), data.get("world"), data.get("seed")
    if not isinstance(scenario, str) or not scenario:
        raise ScenarioError(f"{path}: expected \"scenario\" as a scenario id but got {scenario!r}.")
    if not isinstance(world, dict):
        raise ScenarioError(f"{path}: expected \"world\" as an object of parameters (year_shift, anchor_day, "
                            f"currency, ...) but got {world!r}.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ScenarioError(f"{path}: expected \"seed\" as a seed >= 0 (the seed the parameters came from) but got "
                            f"{seed!r}; or leave it out.")
    return WorldFile(scenario, world, seed)
