"""The communications grader on the labelled corpora rewritten the ways chat models write the same words.

Run from the repository root:

    python benchmarks/bench_comms_variants.py --out benchmarks/results/comms_variants.json

Each rewrite changes how a text is written, never what it says: curly apostrophes and quotes, hard spaces
inside amounts and dates, markdown emphasis around figures and dates, contractions spelled out, American
spelling, amounts without thousands separators, dates month first, as ISO 8601 or as "the 5th of May", months
and weekdays abbreviated, ordinal days, currency codes for symbols, counts in words, "we" for "I", "NOT" in
capitals, exclamation marks, sentences as bullets, a greeting and a sign-off, sentences framed as the agent's
("I can confirm that ...", "Please note that ...", "Just to confirm, ..."), lines hard-wrapped as a plain-text
e-mail's, Windows line ends, two spaces after a full stop, an emoji before a sentence, semicolons for full
stops, a heading, the agent's act said in the passive ("the late fee has been waived"), a dash for a comma,
each date's weekday before it, whole amounts without their cents, sentences as a numbered list, currency codes
after amounts, figures in italics made with underscores, ``US$``, an instalment's amount in brackets, days of
the month in words (``on the fifteenth``), a tilde for "about", a space after the currency sign, an en dash for
"to" between dates, ``/month``, ``&`` for "and", "due 5 May" without "on", a currency code joined to its amount
(``GBP120.00``), terms in quotation marks, "payment" for "instalment", "i.e." for "which is", a summary line first.
Every
text of every corpus (``tests/fixtures/comms_corpus*.jsonl``) that a rewrite changes is graded as written and as
rewritten (on the scenario's reference solution at the entry's seed, as ``bench_comms_corpus.py`` grades it),
and a verdict that moves is a defect of the grader, in either direction:

- a true text that passes as written and fails rewritten (a careful sentence failed for its typography);
- a false text (a disclosure, a wrong figure, a false claim) caught as written and passed rewritten.

Prints and writes, per rewrite, how many texts it changed and how many verdicts moved, each listed. Exit
status 1 when any verdict moved, 2 when a corpus entry does not play.
"""

from __future__ import annotations

import argparse
import re
import textwrap
import time
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path
from typing import Any

from bench_comms_corpus import (  # benchmarks/, this script's folder
    ROOT,
    comms_checks,
    load_corpus,
    measured,
    revision,
    write_result,
)

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_CODES = "USD|EUR|GBP|KWD|BHD|JPY|CHF|CAD|AUD"
_MONEY = (rf"[$£€¥]\s?\d[\d,]*(?:\.\d+)?|\b(?:{_CODES})\s?\d[\d,]*(?:\.\d+)?|"
          rf"\b\d[\d,]*(?:\.\d+)?\s?(?:{_CODES})\b")
_DATE = rf"\b\d{{1,2}}(?:st|nd|rd|th)? (?:{_MONTHS})(?: \d{{4}})?\b"
_CONTRACTIONS = {"I've": "I have", "I'm": "I am", "won't": "will not", "can't": "cannot", "don't": "do not",
                 "isn't": "is not", "hasn't": "has not", "haven't": "have not", "it's": "it is",
                 "you'll": "you will", "you're": "you are", "we've": "we have", "doesn't": "does not"}
_MONTH_NUMBER = {name: i for i, name in enumerate(_MONTHS.split("|"), 1)}
_NUMBER_WORDS = dict(zip(map(str, range(2, 13)), ["two", "three", "four", "five", "six", "seven", "eight", "nine",
                                                  "ten", "eleven", "twelve"], strict=True))
_CONTRACTION = re.compile(r"\b(?:" + "|".join(map(re.escape, _CONTRACTIONS)) + r")\b")

_ABBREVIATED = {name: name[:4] if name == "September" else name[:3] for name in _MONTHS.split("|") if name != "May"}


def _ordinal(day: str) -> str:
    n = int(day)
    return f"{n}{'th' if 11 <= n % 100 <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


#: The sentence openings a frame goes before (``I can confirm that your ...``).
_OPENING = re.compile(r"(^|(?<=[.!?]\s)|(?<=\n))(I've|I have|We've|Your|The)\b")


def _framed(text: str, frame: str) -> str:
    """``text`` with ``frame`` before each sentence that opens with the agent's act or the customer's records."""
    def one(m: re.Match[str]) -> str:
        word = m.group(2) if m.group(2).startswith("I") else m.group(2)[0].lower() + m.group(2)[1:]
        return m.group(1) + frame + word
    return _OPENING.sub(one, text)


def _wrapped(text: str, width: int) -> str:
    """``text`` hard-wrapped at ``width`` columns, line by line, as a plain-text e-mail is."""
    return "\n".join(textwrap.fill(line, width) if line.strip() else line for line in text.split("\n"))


#: The agent's act on a named thing (``I've waived the late fee``), said in the passive (``the late fee has been
#: waived``).
_PASSIVE = re.compile(r"\b(?:I've|I have|We've|We have) (?:now |also |just )?(waived|moved|split|cancelled|refunded|"
                      r"deferred|changed|updated|removed|escalated|passed|spread) (the|your) ((?:[a-z]+ ){0,2}?"
                      r"(fee|instalments?|installments?|payments?|due date|due day|plan|balance|policy|request|"
                      r"case))\b(?=[.,;!]|\s+(?:to|into|onto|over|for|from|as)\b)")


def _passive(m: re.Match[str]) -> str:
    plural = m.group(4).endswith("s") and m.group(4) != "fee"
    return f"{m.group(2)} {m.group(3)}{' have' if plural else ' has'} been {m.group(1)}"


def _iso(m: re.Match[str]) -> str:
    return f"{m.group(3)}-{_MONTH_NUMBER[m.group(2)]:02d}-{int(m.group(1)):02d}"


_ANY_WEEKDAY = re.compile(r"\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b")


def _with_weekday(m: re.Match[str]) -> str:
    """A date with its own weekday before it (``Friday 15 May 2026``); a day the month has not, as it is."""
    try:
        day = date(int(m.group(3)), _MONTH_NUMBER[m.group(2)], int(m.group(1)))
    except ValueError:
        return m.group(0)
    return f"{day.strftime('%A')} {m.group(0)}"


def _numbered(text: str) -> str:
    """Every sentence after the first as an item of a numbered list."""
    first, *rest = re.split(r"(?<=[.!])\s+(?=[A-Z])", text)
    return first + "".join(f"\n{i}. {sentence}" for i, sentence in enumerate(rest, 1))


#: Each rewrite: the same words, typed another way.
REWRITES: dict[str, Callable[[str], str]] = {
    "curly apostrophes": lambda t: t.replace("'", "\u2019"),
    "curly quotes": lambda t: re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", t),
    "hard spaces": lambda t: re.sub(rf"(\d|\b(?:{_CODES}|{_MONTHS})) (?=\d|(?:{_CODES}|{_MONTHS})\b)", "\\1\u00a0", t),
    "bold figures": lambda t: t if "**" in t else re.sub(rf"({_MONEY}|{_DATE})", r"**\1**", t),
    "contractions spelled out": lambda t: _CONTRACTION.sub(lambda m: _CONTRACTIONS[m.group(0)], t),
    "american spelling": lambda t: t.replace("instalment", "installment").replace("Instalment", "Installment"),
    "no thousands separators": lambda t: re.sub(r"(?<=\d),(?=\d{3}\b)", "", t),
    "dates as ISO 8601": lambda t: re.sub(rf"\b(\d{{1,2}}) ({_MONTHS}) (\d{{4}})\b", _iso, t),
    "currency codes for symbols": lambda t: re.sub(r"\$(\d{1,3}(?:,\d{3})*(?:\.\d+)?)", r"USD \1",
                                                   re.sub(r"£(\d{1,3}(?:,\d{3})*(?:\.\d+)?)", r"\1 GBP", t)),
    "counts in words": lambda t: re.sub(r"\b(\d{1,2}) (instalments|installments|payments|months)\b",
                                        lambda m: f"{_NUMBER_WORDS.get(m.group(1), m.group(1))} {m.group(2)}", t),
    "we for I": lambda t: re.sub(r"\bI've\b", "we've", re.sub(r"\bI have\b", "we have", t)),
    "exclamation marks": lambda t: re.sub(r"\.(?=\s|$)", "!", t),
    "sentences as bullets": lambda t: re.sub(r"(?<=[.!])\s+(?=[A-Z])", "\n- ", t),
    "greeting and sign-off": lambda t: f"Hi there,\n\n{t}\n\nBest regards,\nCustomer Support",
    "months abbreviated": lambda t: re.sub(r"\b(" + "|".join(_ABBREVIATED) + r")\b",
                                           lambda m: _ABBREVIATED[m.group(1)], t),
    "weekdays abbreviated": lambda t: re.sub(r"\b(Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b",
                                             lambda m: m.group(1)[:3], t),
    "ordinal days": lambda t: re.sub(rf"\b(\d{{1,2}}) ({_MONTHS})\b",
                                     lambda m: f"{_ordinal(m.group(1))} {m.group(2)}", t),
    "the Nth of the month": lambda t: re.sub(rf"\b(\d{{1,2}}) ({_MONTHS})\b",
                                             lambda m: f"the {_ordinal(m.group(1))} of {m.group(2)}", t),
    "negation in capitals": lambda t: re.sub(r"\bnot\b", "NOT", t),
    "I can confirm that ...": lambda t: _framed(t, "I can confirm that "),
    "please note that ...": lambda t: _framed(t, "Please note that "),
    "just to confirm, ...": lambda t: _framed(t, "Just to confirm, "),
    "I wanted to let you know that ...": lambda t: _framed(t, "I wanted to let you know that "),
    "I'm pleased to let you know that ...": lambda t: _framed(t, "I'm pleased to let you know that "),
    "good news: ...": lambda t: _framed(t, "Good news: "),
    "hard-wrapped at 72 columns": lambda t: _wrapped(t, 72),
    "hard-wrapped at 50 columns": lambda t: _wrapped(t, 50),
    "Windows line ends": lambda t: t.replace("\n", "\r\n"),
    "two spaces after a full stop": lambda t: re.sub(r"([.!?]) (?=[A-Z])", r"\1  ", t),
    "an emoji before a sentence": lambda t: _OPENING.sub(lambda m: f"{m.group(1)}\u2705 {m.group(2)}", t),
    "semicolons for full stops": lambda t: re.sub(r"\. (I|Your|The|We|This|It)\b",
                                                  lambda m: "; " + (m.group(1) if m.group(1) == "I" else
                                                                    m.group(1).lower()), t),
    "a heading": lambda t: f"## Update on your plan\n\n{t}",
    "the agent's act in the passive": lambda t: _PASSIVE.sub(_passive, t),
    "a dash for a comma": lambda t: re.sub(r"(?<=[a-z0-9]), (?=[a-z])", " \u2014 ", t, count=1),
    "the weekday before a date": lambda t: t if _ANY_WEEKDAY.search(t) else re.sub(
        rf"(?<!\*\*)\b(\d{{1,2}}) ({_MONTHS}) (\d{{4}})\b", _with_weekday, t),
    "whole amounts without cents": lambda t: re.sub(r"([$£€]\d[\d,]*)\.00\b", r"\1", t),
    "sentences numbered": _numbered,
    "amounts with the code after": lambda t: re.sub(r"£(\d(?:[\d,]*\d)?(?:\.\d+)?)", r"\1 GBP",
                                                    re.sub(r"\$(\d(?:[\d,]*\d)?(?:\.\d+)?)", r"\1 USD", t)),
    "italic figures in underscores": lambda t: re.sub(rf"(?<![\w*_])({_DATE}|[$£€]\d[\d,]*(?:\.\d+)?)(?![\w*_])",
                                                      r"_\1_", t),
    "& for and": lambda t: t.replace(" and ", " & "),
    "no 'on' between due and a date": lambda t: re.sub(rf"\b(due|collected|taken) on (\d{{1,2}} (?:{_MONTHS}))",
                                                       r"\1 \2", t),
    "codes joined to amounts": lambda t: re.sub(r"£(\d)", r"GBP\1", t),
    "terms in quotation marks": lambda t: re.sub(r"\b(due date|due day|late fee)\b", r'"\1"', t),
    "payment for instalment": lambda t: re.sub(r"\binstalment", "payment", re.sub(r"\bInstalment", "Payment", t)),
    "i.e. for which is": lambda t: t.replace(", which is ", ", i.e. "),
    "a summary line first": lambda t: "Summary: your request has been handled as described below.\n\n" + t,
    "US$ for $": lambda t: re.sub(r"(?<![A-Z])\$(?=\d)", "US$", t),
    "an amount in brackets after its instalment": lambda t: re.sub(
        r"((?:[Yy]our|[Tt]he) (?:next |first |last |final )?(?:payment|instalment)) of ([$£€¥][\d,]+\.\d+)",
        r"\1 (\2)", t),
    "days of the month in words": lambda t: re.sub(r"\b(on|to) the (5th|10th|15th|20th|31st)\b", lambda m: (
        f"{m.group(1)} the " + {"5th": "fifth", "10th": "tenth", "15th": "fifteenth", "20th": "twentieth",
                                "31st": "thirty-first"}[m.group(2)]), t),
    "a tilde for about": lambda t: re.sub(r"\b(?:about|around|approximately|roughly) (?=[$£€¥]|\b(?:USD|EUR|GBP|"
                                          r"KWD|JPY) )", "~", t),
    "a space after the currency sign": lambda t: re.sub(r"([$£€])(?=\d)", r"\1 ", t),
    "an en dash for to between dates": lambda t: re.sub(
        rf"\b(\d{{1,2}} (?:{_MONTHS})(?: \d{{4}})?) to (\d{{1,2}} (?:{_MONTHS}) \d{{4}})\b", "\\1\u2013\\2", t),
    "/month for a month": lambda t: re.sub(r"(\d) (?:per|a|each) month\b", r"\1/month", t),
    "month first": lambda t: re.sub(rf"\b(\d{{1,2}}) ({_MONTHS})( \d{{4}})?\b",
                                    lambda m: f"{m.group(2)} {m.group(1)}" + (f",{m.group(3)}" if m.group(3) else ""),
                                    t),
}


def corpora() -> list[Path]:
    """Every labelled corpus of the repository."""
    return sorted((ROOT / "tests" / "fixtures").glob("comms_corpus*.jsonl"))


def _failed(checks: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in checks if not c["passed"]]


def measure(entries: Iterable[dict[str, Any]], rewrites: dict[str, Callable[[str], str]] = REWRITES,
            ) -> dict[str, dict[str, Any]]:
    """Per rewrite: the texts it changed and the verdicts that moved (see the module's docstring)."""
    scenarios: dict[tuple[str, str], Any] = {}
    as_written: dict[str, list[str]] = {}
    out: dict[str, dict[str, Any]] = {name: {"changed": 0, "true_failed": [], "false_passed": []}
                                      for name in rewrites}
    for entry in entries:
        for name, rewrite in rewrites.items():
            text = rewrite(entry["text"])
            if text == entry["text"]:
                continue
            row = out[name]
            row["changed"] += 1
            if entry["id"] not in as_written:
                as_written[entry["id"]] = _failed(comms_checks(entry, scenarios))
            before = as_written[entry["id"]]
            after = comms_checks({**entry, "text": text}, scenarios)
            if entry["label"] == "true" and not before and _failed(after):
                row["true_failed"].append({"id": entry["id"], "text": text, "failed": [
                    {"check": c["name"], "detail": c["detail"]} for c in after if not c["passed"]]})
            elif entry["label"] != "true" and before and not _failed(after):
                row["false_passed"].append({"id": entry["id"], "text": text})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, action="append",
                        help="a labelled corpus (repeatable; default: every tests/fixtures/comms_corpus*.jsonl)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "comms_variants.json")
    args = parser.parse_args(argv)
    paths = args.corpus or corpora()
    entries = [e for path in paths for e in load_corpus(path)]
    start = time.perf_counter()
    found = measured(measure, entries)
    if found is None:
        return 2
    moved = 0
    for name, row in found.items():
        moved += len(row["true_failed"]) + len(row["false_passed"])
        print(f"{name:<38} {row['changed']:>5} texts rewritten; true texts now failing {len(row['true_failed'])}, "
              f"false texts now passing {len(row['false_passed'])}")
        for e in row["true_failed"]:
            print(f"    true {e['id']}: {e['failed'][0]['detail']}")
        for e in row["false_passed"]:
            print(f"    {e['id']}: no longer caught")
    names = [p.resolve().relative_to(ROOT).as_posix() if p.resolve().is_relative_to(ROOT) else p.name for p in paths]
    result = {"revision": revision(), "corpora": names,
              "entries": len(entries), "wall_s": round(time.perf_counter() - start, 1), "rewrites": found}
    print(f"\n{moved} verdict(s) moved")
    write_result(args.out, result)
    return 1 if moved else 0


if __name__ == "__main__":
    raise SystemExit(main())
