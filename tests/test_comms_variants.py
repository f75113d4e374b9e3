"""The communications grader reads a text typed the ways chat models type it as it reads the plain text (slow).

Each rewrite of ``benchmarks/bench_comms_variants.py`` changes how a corpus text is typed (curly apostrophes,
hard spaces, bold figures, contractions spelled out, month-first dates, ...), never what it says: no verdict may
move, in either direction.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_comms_corpus import load_corpus  # noqa: E402
from bench_comms_variants import REWRITES, measure  # noqa: E402

pytestmark = pytest.mark.slow


def test_no_verdict_moves_when_a_text_is_typed_another_way() -> None:
    entries = load_corpus(ROOT / "tests" / "fixtures" / "comms_corpus_heldout3.jsonl")
    found = measure(entries)
    assert all(row["changed"] > 0 for name, row in found.items() if name != "curly quotes"), found
    moved = {name: (row["true_failed"], row["false_passed"]) for name, row in found.items()
             if row["true_failed"] or row["false_passed"]}
    assert not moved, moved


#: Rewrites that change only characters around the words (the letters and digits stay as they are).
TYPOGRAPHIC = ("curly apostrophes", "curly quotes", "hard spaces", "bold figures", "no thousands separators",
               "exclamation marks", "sentences as bullets")


def test_each_rewrite_changes_a_text_it_applies_to() -> None:
    """Every rewrite changes a text holding what it rewrites (none is silently a no-op), and a typographic one keeps
    its letters and digits."""
    import re

    texts = ("I've waived the late fee. I've moved your $1,005.92 payment of 3 payments from Monday 5 January 2026 "
             "to \"the 20th\"; it isn't paid and is not due. I have noted the instalment 1,234.50 USD.\n\n"
             "Best regards",
             "Your next payment of $100.00 is due on 15 May 2026, about $100 a month from 15 May to 15 June 2026, "
             "moved to the 15th. The rest follow monthly, with a £5.00 fee, which is waived.")
    for name, rewrite in REWRITES.items():
        changed = [(text, out) for text in texts if (out := rewrite(text)) != text]
        assert changed, name
        if name in TYPOGRAPHIC:
            for text, out in changed:
                assert re.sub(r"[^A-Za-z0-9]", "", out) == re.sub(r"[^A-Za-z0-9]", "", text), (name, out)
