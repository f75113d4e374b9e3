"""Build snapshots/families.json: the small world plus the fixtures task families draw their targets from.

Run from the repository root: python scripts/make_families_snapshot.py [OUT]
(OUT defaults to snapshots/families.json; tests/test_families.py writes elsewhere and compares.)

Every record of snapshots/small.json is kept (so bystanders, look-alike names and the
catalogue's targets are all there), and fixtures are added whose facts a family's
parameter ranges need and the small world lacks: late fees of amounts on both sides of
the waiver authority, with no earlier waiver, one within the last 12 months, or one
longer ago; plans whose one due-day change or one deferral of the term is used up; and
plans paid far ahead, whose cancellation refund is above the escalation threshold. The
clock is the small world's (2026-04-20). The same script writes the same bytes.
"""

from __future__ import annotations

import sys
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simworld._world.dates import roll, schedule_dates  # noqa: E402
from simworld._world.models import Customer, Fee, Instalment, Payment, Plan, Policy  # noqa: E402
from simworld._world.money import Money, allocate  # noqa: E402
from simworld._world.snapshot import SnapshotLoader, dump_snapshot  # noqa: E402
from simworld._world.state import Base, State  # noqa: E402

small = SnapshotLoader().load(ROOT / "snapshots" / "small.json")
tables: dict[str, dict[str, object]] = {t: dict(r) for t, r in small.base.tables.items()}

FIRST = ["Aiko", "Bruno", "Carla", "Dmitri", "Esra", "Felix", "Gita", "Hugo", "Ilse", "Jonas", "Kira", "Leon",
         "Mira", "Nico", "Olga", "Pavel", "Rosa", "Stefan", "Tara", "Umut", "Vera", "Wim", "Yara", "Zora",
         "Anton", "Beatriz", "Cyrus", "Delia", "Emil", "Flora", "Goran", "Helga", "Ivo", "Jana", "Karim", "Luz"]
LAST = ["Lindqvist", "Ferreira", "Kowalski", "Haddadi", "Brennan", "Oyelaran", "Castell", "Marchetti", "Nakagawa",
        "Petrakis", "Sorensen", "Valdez"]


def add(n: int, premium: str, anchor: int, paid: int, verified: bool = True, term_start: str = "2026-01-01",
        due_day_changes: int = 0, deferrals: int = 0) -> str:
    """A USD customer with one policy and a monthly plan of 12 whose first ``paid`` instalments are paid."""
    key = f"f{n:02d}"
    cid, pid, plid = f"cus_{key}", f"pol_{key}", f"pln_{key}"
    name = f"{FIRST[n % len(FIRST)]} {LAST[(n + n // len(FIRST)) % len(LAST)]}"  # distinct for n < 432
    tables["customers"][cid] = Customer(cid, name, f"{name.lower().replace(' ', '.')}@example.net", verified,
                                        "America/New_York", "")
    start = date.fromisoformat(term_start)
    end = date(start.year + 1, start.month, start.day) - timedelta(days=1)
    prem = Money.parse(premium, "USD")
    tables["policies"][pid] = Policy(pid, cid, "home", "USD", start, end, prem)
    insts = []
    for seq, (due, amount) in enumerate(zip(schedule_dates(start, anchor, 12), allocate(prem, 12, "last"),
                                            strict=True), 1):
        done = seq <= paid
        insts.append(Instalment(f"{plid}-{seq}", seq, due, amount, amount if done else Money.zero("USD"),
                                "paid" if done else "planned", roll(due, "following")))
        if done:
            pay = Payment(f"pay-{plid}-auto-{seq}", plid, "USD", amount, min(due, date(2026, 4, 20)), f"auto-{seq}",
                          ((seq, amount),))
            tables["payments"][pay.id] = pay
    tables["plans"][plid] = Plan(plid, pid, "USD", anchor, "monthly", "either", tuple(insts),
                                 due_day_changes=due_day_changes, deferrals=deferrals)
    return plid


def fee(plan_id: str, suffix: str, amount: str, status: str, charged: str, waived: str | None = None) -> None:
    fid = f"fee_{plan_id.removeprefix('pln_')}{suffix}"
    tables["fees"][fid] = Fee(fid, plan_id, "USD", "late", Money.parse(amount, "USD"), status,  # type: ignore[arg-type]
                              date.fromisoformat(charged), date.fromisoformat(waived) if waived else None)


# Late fees around the waiver authority (25.00 USD), crossed with the customer's waiver history.
n = 0
for amount in ("5.00", "12.50", "19.99", "24.99", "25.00", "25.01", "40.00", "75.00", "120.00"):
    for history in ("none", "recent", "old"):
        n += 1
        plan = add(n, ["960.00", "1080.00", "1200.00", "1440.00"][n % 4], [1, 5, 10, 20][n % 4], 4)
        if history == "recent":  # waived 161 days before the clock: inside the 12-month window
            fee(plan, "a", "15.00", "waived", "2025-11-08", "2025-11-10")
        elif history == "old":  # waived 415 days before the clock: outside it
            fee(plan, "a", "15.00", "waived", "2025-03-01", "2025-03-03")
        fee(plan, "", amount, "open", "2026-04-08")
# Unverified holders with an open small fee (permissioning).
for amount in ("15.00", "20.00"):
    n += 1
    fee(add(n, "1200.00", 1, 4, verified=False), "", amount, "open", "2026-04-06")
# The term's one due-day change already made.
for anchor in (5, 15):
    n += 1
    add(n, "1200.00", anchor, 4, due_day_changes=1)
# The term's one deferral already made.
n += 1
plan_id = add(n, "1080.00", 10, 3, deferrals=1)
# Paid far ahead: a cancellation refund above the 500.00 threshold.
for premium, paid in (("2400.00", 12), ("3000.00", 10)):
    n += 1
    add(n, premium, 1, paid)

# Plain plans, a few months paid (capacity for the families that need no special fact: pricing, splits,
# quotes, premium, frequency and currency requests), numbered from 41.
PLAIN = 41
for k in range(160):
    n = PLAIN + k
    add(n, ["960.00", "1080.00", "1200.00", "1320.00", "1440.00", "1800.00"][k % 6], [1, 5, 10, 15, 20, 25, 28][k % 7],
        3 + k % 2)
# More plans paid far ahead (cancellation refund above the threshold), numbered from 201.
for k in range(40):
    n = 201 + k
    add(n, ["2400.00", "2640.00", "3000.00", "3600.00"][k % 4], 1, 10 + k % 3)

base = Base.build({t: dict(r) for t, r in tables.items()})  # type: ignore[arg-type]
out = dump_snapshot(State.of(base), small.clock, small.policy)
target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "snapshots" / "families.json"
target.write_bytes(out)
print(f"wrote {target}: {len(out)} bytes, {len(tables['customers'])} customers")
