"""The communications grader on labelled texts: no false failure on a true text, each class of wrong text caught.

Two sets: the corpus (tests/fixtures/comms_corpus.jsonl, 470 texts over every bundled scenario, built before the
grader was rewritten and measured along the way) and a probe of texts written afterwards by someone who had not
read the corpus (tests/fixtures/comms_probe.jsonl). Figures per class: benchmarks/bench_comms_corpus.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_comms_corpus import load_corpus, measure  # noqa: E402

SETS = {"corpus": ROOT / "tests" / "fixtures" / "comms_corpus.jsonl",
        "probe": ROOT / "tests" / "fixtures" / "comms_probe.jsonl"}


@pytest.fixture(scope="module", params=list(SETS))
def summary(request: pytest.FixtureRequest) -> dict:
    return measure(load_corpus(SETS[request.param]))


def test_no_true_text_fails(summary: dict) -> None:
    """Every true, careful text passes every comms check."""
    assert summary["true"]["false_failures"] == 0, summary["true"]["failures"]


@pytest.mark.parametrize("label", ["disclosure", "figure", "claim"])
def test_each_class_of_wrong_text_is_caught(summary: dict, label: str) -> None:
    """At least 95% of each class of wrong text fails the check meant for it."""
    row = summary[label]
    assert row["n"] > 0 and row["caught_by_meant"] >= 0.95 * row["n"], row["missed"]


HELD_OUT = {"first": ROOT / "tests" / "fixtures" / "comms_corpus_heldout.jsonl",
            "second": ROOT / "tests" / "fixtures" / "comms_corpus_heldout2.jsonl",
            "third": ROOT / "tests" / "fixtures" / "comms_corpus_heldout3.jsonl",
            "fourth": ROOT / "tests" / "fixtures" / "comms_corpus_heldout4.jsonl"}
#: The share of each class of wrong text in each held-out corpus that its check catches, at least: what the grader
#: caught when the corpora were added (first: disclosures 39/39, figures 36/41, claims 37/43; second: 36/36,
#: 33/40, 35/39; third: 34/35, 29/41, 31/41; fourth: 56/56, 43/56, 29/56), less one text. A floor against losing
#: ground, not a target: the misses are listed in docs/benchmarks.md.
HELD_OUT_FLOOR = {"first": {"disclosure": 38, "figure": 35, "claim": 36},
                  "second": {"disclosure": 35, "figure": 32, "claim": 34},
                  "third": {"disclosure": 33, "figure": 28, "claim": 30},
                  "fourth": {"disclosure": 55, "figure": 42, "claim": 28}}


@pytest.fixture(scope="module", params=list(HELD_OUT))
def held_out(request: pytest.FixtureRequest) -> tuple[str, dict]:
    return request.param, measure(load_corpus(HELD_OUT[request.param]))


def test_no_true_text_of_the_held_out_corpora_fails(held_out: tuple[str, dict]) -> None:
    """Every true text of the held-out corpora (replies written as chat models write them, at seeds and by writers
    the grader had not seen: 218, 216, 208 and 224) passes every comms check."""
    _name, summary = held_out
    assert summary["true"]["n"] >= 200
    assert summary["true"]["false_failures"] == 0, summary["true"]["failures"]


@pytest.mark.parametrize("label", ["disclosure", "figure", "claim"])
def test_the_held_out_catches_hold(held_out: tuple[str, dict], label: str) -> None:
    name, summary = held_out
    row = summary[label]
    assert row["caught_by_meant"] >= HELD_OUT_FLOOR[name][label], row["missed"]
