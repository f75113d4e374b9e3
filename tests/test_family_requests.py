"""Task families: every request reads as the customer's own message, with every field filled, and no two
requests read alike unless they ask the same thing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from simworld._families import Family, Instance, load_families
from simworld._families._generate import _draw, write_instance
from simworld._scenario.scenario import load_scenario
from simworld._world.snapshot import SnapshotLoader
from simworld.errors import FamilyError

#: A greeting that opens a line, then the customer's name (first or full) that is not followed by "here": the
#: desk greeting the customer ("Hello, Ana Lopez."), where the customer should be the one writing ("Hello, it's
#: Ana Lopez", "Hi, Ana Lopez here").
_GREETING = (r"^[ \t]*(?:hello|hi|hey|dear|good (?:morning|afternoon|evening))\b[\s,!.]*{name}\b"
             r"(?!\s*(?:\([^)]*\)\s*)?here\b)")
_UNFILLED = re.compile(r"\{[A-Za-z_][\w.]*\}|\[\[\w+\]\]")


def _instances(family: Family, count: int, seed: int) -> list[Instance]:
    """Up to ``count`` instances of ``family`` (fewer when its split holds fewer), without playing their solutions:
    the requests are the subject here, not the ground truth (tests/test_families.py proves that)."""
    while True:
        try:
            return _draw(family, count, seed, "dev", None, lambda *a: []).instances  # type: ignore[arg-type]
        except FamilyError:
            count = count * 3 // 4


def _request(family: Family, inst: Instance, out: Path, loader: SnapshotLoader) -> tuple[str, dict[str, Any]]:
    """The request as the agent reads it at seed 0, and the variables it was filled from."""
    write_instance(family, inst, 0, out)
    scenario = load_scenario(out / inst.id, loader)
    variables = scenario.instance(0).vars
    return scenario.request(variables), variables


def _addresses_customer(text: str, variables: dict[str, Any]) -> bool:
    full, first = str(variables["customer_name"]), str(variables["first_name"])
    rest = full[len(first):].strip()
    names = f"(?:{re.escape(full)}|{re.escape(first)}(?!\\s+{re.escape(rest)}))" if rest else re.escape(full)
    return re.search(_GREETING.format(name=names), text, re.I | re.M) is not None


class TestWhoSpeaks:
    def test_the_greeting_rule_tells_the_two_apart(self) -> None:
        """The check flags the desk greeting the customer by name, and passes the customer introducing themself."""
        names = {"customer_name": "Ana Lopez", "first_name": "Ana"}
        for text in ("Hello, Ana Lopez (ana@example.net). Please bill me in EUR.", "Hi, Ana Lopez. Cancel it.",
                     "Hi Ana, please move my due date."):
            assert _addresses_customer(text, names), text
        for text in ("Hello, it's Ana Lopez (ana@example.net).", "Hi, Ana Lopez here (ana@example.net).",
                     "Hello, Ana Lopez (ana@example.net) here.", "Hi! Ana here.", "Hello, this is about the "
                     "account of Ana Lopez.", "Hi, regarding Ana Lopez: move it."):
            assert not _addresses_customer(text, names), text

    def test_every_phrasing_of_every_family_is_the_customer_writing(self, tmp_path: Path) -> None:
        """In every family and every phrasing style it offers, the request never greets the customer by name (the
        customer is the writer), and every {var} and [[name]] field is filled."""
        loader = SnapshotLoader()
        wrong: list[str] = []
        for family in load_families():
            for inst in _instances(family, 2, 5):
                for phrasing in sorted(family.phrasings):
                    variant = attrs.evolve(inst, phrasing=phrasing, id=f"{inst.id}-{phrasing}")
                    text, variables = _request(family, variant, tmp_path, loader)
                    if _addresses_customer(text, variables):
                        wrong.append(f"{family.name} ## {phrasing}: greets the customer: {text[:90]!r}")
                    if _UNFILLED.search(text):
                        wrong.append(f"{family.name} ## {phrasing}: unfilled {_UNFILLED.findall(text)}")
        assert not wrong, "\n".join(wrong)


@pytest.mark.slow
class TestDistinctRequests:
    def test_requests_differ_when_their_parameters_do(self, tmp_path: Path) -> None:
        """In a draw of about 1,000 instances over every family, no two share a request (as the agent reads it at
        seed 0) unless they share the family, fixture, parameters and phrasing."""
        loader = SnapshotLoader()
        families = load_families()
        per_family = -(-1000 // len(families))
        by_text: dict[str, set[str]] = {}
        drawn = 0
        for family in families:
            for inst in _instances(family, per_family, 1):
                text, _ = _request(family, inst, tmp_path, loader)
                point = repr((family.name, sorted(inst.fixture.items()), inst.params, inst.phrasing))
                by_text.setdefault(text, set()).add(point)
                drawn += 1
        assert drawn >= 900
        shared = {t: p for t, p in by_text.items() if len(p) > 1}
        assert not shared, "\n".join(f"{t[:80]!r}: {sorted(p)}" for t, p in list(shared.items())[:5])
