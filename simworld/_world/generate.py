"""Generated worlds: a large snapshot from a seed, for scale tests and speed measurements.

``simworld generate --customers 500 --seed 1 --out snapshots/large.json`` writes the
records of a base snapshot (``small`` by default, so every bundled scenario's target
is there) plus ``customers`` generated ones, each with one or two policies, a monthly
plan, past payments and now and then a fee. The same seed writes the same bytes.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from simworld._world.dates import one_year_term_end, roll, schedule_dates
from simworld._world.models import Customer, Fee, Instalment, Payment, Plan, Policy
from simworld._world.money import Money, allocate
from simworld._world.snapshot import Snapshot, dump_snapshot
from simworld._world.state import Base, State

__all__ = ["generate"]

_FIRST = ["Ada", "Bo", "Chen", "Dara", "Eli", "Farah", "Gus", "Hiro", "Ines", "Jae", "Kai", "Lior", "Mina", "Nils",
          "Oona", "Pia", "Quinn", "Rui", "Sana", "Teo", "Uma", "Vik", "Wren", "Xia", "Yara", "Zed"]
_LAST = ["Abbott", "Banda", "Costa", "Dubois", "Eze", "Fox", "Gupta", "Horvat", "Ito", "Jensen", "Khan", "Lopez",
         "Moreau", "Nakamura", "Okafor", "Park", "Quist", "Rossi", "Silva", "Tanaka", "Umar", "Vogel", "Weiss"]
_ZONES = ["America/New_York", "America/Chicago", "America/Los_Angeles", "Europe/London", "Europe/Berlin",
          "Asia/Tokyo", "Asia/Kuwait", "Australia/Sydney", "America/Sao_Paulo"]
_PRODUCTS = ["home", "motor", "travel", "pet", "contents"]
_CURRENCIES = {"USD": (400, 3000), "EUR": (400, 3000), "GBP": (300, 2500), "JPY": (40000, 300000),
               "KRW": (400000, 3000000), "KWD": (100, 900), "BHD": (150, 1200)}


def generate(base: Snapshot, customers: int, seed: int) -> bytes:
    """The canonical bytes of ``base``'s records plus ``customers`` generated customers."""
    rng = random.Random(f"simworld-generate/{seed}")
    tables: dict[str, dict[str, object]] = {t: dict(r) for t, r in base.base.tables.items()}
    today = base.clock.date()
    for n in range(1, customers + 1):
        cid = f"cus_g{n:05d}"
        name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
        email = f"{name.lower().replace(' ', '.')}.{n}@example.net"
        tables["customers"][cid] = Customer(cid, name, email, rng.random() < 0.85, rng.choice(_ZONES), "")
        for k in range(1, rng.choice([1, 1, 2]) + 1):
            _policy(tables, rng, cid, f"g{n:05d}{k}", today)
    return dump_snapshot(State.of(Base.build(tables)), base.clock, base.policy)


def _policy(tables: dict[str, dict[str, object]], rng: random.Random, cid: str, key: str, today: date) -> None:
    currency = rng.choice(list(_CURRENCIES))
    lo, hi = _CURRENCIES[currency]
    premium = Money.parse(rng.randint(lo, hi), currency)
    premium = Money(premium.minor + rng.randint(0, 99 if premium.exponent else 0), currency)
    start = today - timedelta(days=rng.randint(0, 330))
    start = start.replace(day=1) if rng.random() < 0.5 else start
    end = one_year_term_end(start)  # a full year: 365 days, or 366 across a 29 February
    pid, plid = f"pol_{key}", f"pln_{key}"
    tables["policies"][pid] = Policy(pid, cid, rng.choice(_PRODUCTS), currency, start, end, premium)
    anchor = rng.choice([1, 5, 10, 15, 20, 28, 29, 30, 31])
    dates = schedule_dates(start, anchor, 12)
    amounts = allocate(premium, 12, "last")
    instalments = []
    for seq, (due, amount) in enumerate(zip(dates, amounts, strict=True), 1):
        paid = due < today
        instalments.append(Instalment(f"{plid}-{seq}", seq, due, amount, amount if paid else Money.zero(currency),
                                      "paid" if paid else "planned", roll(due, "following")))
        if paid:
            payment = Payment(f"pay-{plid}-auto-{seq}", plid, currency, amount, due, f"auto-{seq}",
                              ((seq, amount),))
            tables["payments"][payment.id] = payment
    tables["plans"][plid] = Plan(plid, pid, currency, anchor, "monthly", "either", tuple(instalments))
    if rng.random() < 0.2:
        fid = f"fee_{key}"
        fee_amount = Money(premium.minor // 60, currency)
        tables["fees"][fid] = Fee(fid, plid, currency, "late", fee_amount, "open", today - timedelta(days=10))
