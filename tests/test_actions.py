"""Absurd actions never crash anything: checked first, refused as an error the agent reads, and the episode goes on."""

from __future__ import annotations

import datetime
import enum
import math
import sys
import uuid
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from simworld import make
from simworld._agents.kinds import build_agent_factory
from simworld._episode.environment import Environment
from simworld._episode.play import play
from simworld._running.runner import run_one
from simworld._scenario.scenario import load_suite
from simworld._world.actions import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODES,
    MAX_STRING_CHARS,
    MAX_TEXT_CHARS,
    MAX_USAGE_TOKENS,
    Refused,
    check_action,
    plain_action,
)
from simworld._world.clock import TimeGuard
from simworld._world.state import canonical_bytes

SID = "waive-small-fee"  # at seed 0: customer "Jon Park" (cus_010), plan pln_010
FIND = {"tool": "find_customer", "args": {"query": "Jon Park"}}
DECLINE = {"tool": "decline", "args": {"reason": "Testing absurd actions."}}


class BadRepr:
    """An object nothing may print: its repr raises."""

    def __repr__(self) -> str:
        raise RuntimeError("repr must never be called")

    __str__ = __repr__


class Sneaky(dict):
    """A dict whose own methods all raise: the checks must read it through dict itself."""

    def get(self, *args: Any) -> Any:
        raise RuntimeError("get must never be called")

    def items(self) -> Any:
        raise RuntimeError("items must never be called")

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("__getitem__ must never be called")


def _cycle() -> dict[str, Any]:
    args: dict[str, Any] = {"plan_id": "pln_010"}
    args["again"] = args
    return {"tool": "get_plan", "args": args}


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return {"tool": "get_plan", "args": root}


def _schedule(amount: Any) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"due_date": f"2026-0{m}-01", "amount": "1.000"} for m in (1, 2, 3)]
    items.append({"due_date": "2026-04-01", "amount": amount})
    return {"tool": "set_schedule", "args": {"plan_id": "pln_010", "instalments": items}}


#: name -> (the action, the exact problem the agent is told)
ABSURD: dict[str, tuple[Any, str]] = {
    "huge-int": ({"tool": "get_plan", "args": {"plan_id": 10**5000}},
                 "args.plan_id: an integer of 5001 digits; at most 40 digits"),
    "huge-int-amount": (_schedule(-(10**5000)),
                        "args.instalments[3].amount: an integer of 5001 digits; at most 40 digits"),
    "huge-int-action": (10**5000, "the action: an integer of 5001 digits; at most 40 digits"),
    "huge-int-tool": ({"tool": 7**9000, "args": {}}, "tool: an integer of 7606 digits; at most 40 digits"),
    "cycle": (_cycle(), "args.again: the value contains itself; JSON cannot hold a cycle"),
    "deep": (_deep(100_000), "args.a.a.a.a…a.a.a: nested more than 32 levels deep; at most 32"),
    "giant-string": ({"tool": "send_message", "args": {"customer_id": "cus_010", "subject": "hi",
                                                       "body": "x" * 10_000_000}},
                     "args.body: a string of 10000000 characters; at most 100000"),
    "too-much-text": ({"tool": "get_plan", "args": {"plan_id": ["y" * 90_000] * 12}},
                      "args.plan_id[11]: more than 1000000 characters of text in all, over every string and key; "
                      "at most 1000000"),
    "too-many-values": ({"tool": "get_plan", "args": {"plan_id": list(range(20_000))}},
                        "args.plan_id: more than 10000 values in all; at most 10000"),
    "nan": ({"tool": "get_plan", "args": {"plan_id": math.nan}}, "args.plan_id: nan is not a JSON number; send a "
                                                                 "finite number"),
    "infinity": (_schedule(-math.inf), "args.instalments[3].amount: -inf is not a JSON number; send a finite number"),
    "decimal-nan": (_schedule(Decimal("NaN")), "args.instalments[3].amount: a Decimal that is not finite; send a "
                                               "finite amount"),
    "huge-decimal": (_schedule(Decimal("9" * 500)), "args.instalments[3].amount: a Decimal of 500 digits; at most 40 "
                                                    "digits"),
    "int-key": ({"tool": "get_plan", "args": {1: "pln_010"}}, "args: a key of type int; object keys must be strings"),
    "lone-surrogate": ({"tool": "find_customer", "args": {"query": "Jon \ud800"}},
                       "args.query: a string with a lone surrogate at index 4; strings must be valid Unicode"),
    "giant-key": ({"tool": "get_plan", "args": {"k" * 200_000: 1}},
                  "args: a key of 200000 characters; at most 100000"),
    "set": ({"tool": "get_plan", "args": {"plan_id": {"pln_010"}}},
            "args.plan_id: a value of type set; expected JSON values (object, array, string, number, true, false or "
            "null)"),
    "bytes": ({"tool": "get_plan", "args": {"plan_id": b"pln_010"}},
              "args.plan_id: a value of type bytes; expected JSON values (object, array, string, number, true, false "
              "or null)"),
    "bad-repr": ({"tool": "get_plan", "args": {"plan_id": BadRepr()}},
                 "args.plan_id: a value of type BadRepr; expected JSON values (object, array, string, number, true, "
                 "false or null)"),
    "bad-repr-action": (BadRepr(), "the action: a value of type BadRepr; expected JSON values (object, array, string, "
                                   "number, true, false or null)"),
    "usage-huge-int": ({**FIND, "usage": {"input_tokens": 10**5000}},
                       "usage.input_tokens: an integer of 5001 digits; at most 40 digits"),
    "usage-too-many-tokens": ({**FIND, "usage": {"output_tokens": 10**30}},
                              f"usage.output_tokens: {10**30} tokens; at most 1000000000 per reply"),
    "usage-cycle": ({**FIND, "usage": _cycle()["args"]}, "usage.again: the value contains itself; JSON cannot hold a "
                                                         "cycle"),
    "stop-with-nan-usage": ({"stop": True, "usage": {"input_tokens": math.nan}},
                            "usage.input_tokens: nan is not a JSON number; send a finite number"),
}


@pytest.fixture(scope="module")
def scenario():
    (sc,) = load_suite(None, [SID])
    return sc


class TestAbsurdActionsThroughTheEnvironment:
    @pytest.mark.parametrize("kind", sorted(ABSURD))
    def test_refused_as_an_error_and_the_episode_goes_on(self, kind: str) -> None:
        """Environment.step refuses the action as an error naming the problem; the next valid call still works."""
        action, problem = ABSURD[kind]
        env = make(SID, 0)
        env.reset()
        obs, done = env.step(action)
        assert not done and obs.last_status == "error"
        assert obs.last_result == {"error": f"Refused the action without running it: {problem}."}
        (event,) = env.world.events
        assert (event.kind, event.tool, event.args, event.status) == ("invalid", "", {"refused": problem}, "error")
        obs, done = env.step(FIND)
        assert not done and obs.last_status == "ok" and obs.last_result["customers"][0]["id"] == "cus_010"
        env.step(DECLINE)
        episode = env.episode()
        assert episode.stop_reason == "terminal" and episode.counters["error_calls"] == 1
        assert len(canonical_bytes([e.to_json() for e in episode.events])) < 20_000  # nothing absurd was kept
        line = env.grade()
        assert line["stop_reason"] == "terminal" and canonical_bytes(line)

    def test_the_value_itself_is_never_recorded(self) -> None:
        """Neither the event nor the error holds the absurd value: only its type, size and place."""
        env = make(SID, 0)
        env.reset()
        env.step({"tool": "find_customer", "args": {"query": "Jon" + "z" * 5_000_000}})
        (event,) = env.world.events
        assert "zzzz" not in orjson.dumps(event.to_json()).decode()

    def test_stop_with_absurd_usage_does_not_stop(self) -> None:
        """A stop carrying an absurd usage is refused like any action, so the episode is not over."""
        env = make(SID, 0)
        env.reset()
        _, done = env.step({"stop": True, "usage": {"input_tokens": math.inf}})
        assert not done and not env.done


class TestUsage:
    def test_refused_reply_still_counts_its_tokens(self) -> None:
        """A refused action whose usage is fine still adds its tokens: the reply cost them."""
        env = make(SID, 0)
        env.reset()
        env.step({"tool": "get_plan", "args": {"plan_id": {1}}, "usage": {"input_tokens": 7, "output_tokens": 3}})
        env.step({**FIND, "usage": {"input_tokens": 5}})
        counters = env.episode().counters
        assert (counters["input_tokens"], counters["output_tokens"], counters["total_tokens"]) == (12, 3, 15)

    def test_absurd_usage_counts_nothing(self) -> None:
        """A usage past the limit is refused and adds nothing to the counters."""
        env = make(SID, 0)
        env.reset()
        env.step({**FIND, "usage": {"input_tokens": MAX_USAGE_TOKENS + 1, "output_tokens": 4}})
        counters = env.episode().counters
        assert (counters["input_tokens"], counters["output_tokens"]) == (0, 4)
        assert env.world.events[0].kind == "invalid"

    def test_usage_at_the_limit_is_counted(self) -> None:
        """A usage of exactly MAX_USAGE_TOKENS is an ordinary action."""
        env = make(SID, 0)
        env.reset()
        obs, _ = env.step({**FIND, "usage": {"input_tokens": MAX_USAGE_TOKENS}})
        assert obs.last_status == "ok" and env.episode().counters["input_tokens"] == MAX_USAGE_TOKENS


class AbsurdThenRecover:
    """A Python agent: one absurd action, then a valid lookup, then decline quoting the error it was shown."""

    action: Any = None

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def act(self, obs: Any) -> Any:
        self.seen.append(obs.last_result)
        if len(self.seen) == 1:
            return self.action
        if len(self.seen) == 2:
            return FIND
        return {"tool": "decline", "args": {"reason": str(self.seen[1]["error"])[:500]}}


class TestAbsurdActionsFromAPythonAgent:
    @pytest.mark.parametrize("kind", sorted(ABSURD))
    def test_run_one_keeps_the_episode(self, scenario, kind: str) -> None:
        """Through run_one (a python: agent on its watchdog thread) the episode is kept, the agent reads the error
        and recovers, and the result line is written as usual."""
        action, problem = ABSURD[kind]
        agent = type("Agent", (AbsurdThenRecover,), {"action": action})
        episode, line = run_one(scenario, 0, agent)
        assert (line["stop_reason"], line["outcome"], line["error"]) == ("terminal", "decline", None)
        assert [(e.kind, e.status) for e in episode.events] == [("invalid", "error"), ("read", "ok"),
                                                                ("terminal", "ok")]
        assert episode.events[0].args == {"refused": problem}
        assert problem[:100] in episode.events[2].args["reason"]  # the agent read what was wrong
        assert canonical_bytes(line)

    def test_freezegun_dates_are_plain_dates(self, scenario) -> None:
        """A date the agent builds under the run's freezegun (a FakeDate) is recorded as its ISO text."""
        seen: list[Any] = []

        class DateAgent:
            def act(self, obs: Any) -> Any:
                seen.append(type(date.today()))
                if obs.last_tool is None:
                    return {"tool": "find_customer", "args": {"query": date.today()}}
                return None

        with TimeGuard() as guard:
            episode = play(Environment(scenario, 0, agent_name="dates", guard=guard), lambda sc, s, v: DateAgent())
        assert seen[0] is not date  # freezegun's subclass, which orjson refuses
        assert episode.events[0].args == {"query": episode.events[0].at[:10]}


#: name -> (the raw line the process prints, the start of the problem it is told)
ABSURD_LINES: dict[str, tuple[bytes, str]] = {
    "past-orjson-depth": (b"[" * 5000 + b"]" * 5000, "the action: nested too deep to read (at char 1025); at most 32"),
    "past-max-depth": (b'{"tool": "get_plan", "args": ' + b"[" * 100 + b"]" * 100 + b"}",
                       "args[0][0][0][0]…[0][0][0]: nested more than 32 levels deep; at most 32"),
    "number-past-a-double": (b'{"tool": "get_plan", "args": {"plan_id": 1' + b"0" * 400 + b"}}",
                             "the action: a number too large to read (at char 41)"),
    "lone-surrogate-escape": (b'{"tool": "find_customer", "args": {"query": "\\ud800"}}',
                              "the action: a string with a lone surrogate escape"),
    "giant-string": (b'{"tool": "find_customer", "args": {"query": "' + b"q" * 300_000 + b'"}}',
                     "args.query: a string of 300000 characters; at most 100000"),
    "too-many-values": (b'{"tool": "get_plan", "args": [' + b",".join([b"1"] * 30_000) + b"]}",
                        "args: more than 10000 values in all; at most 10000"),
    "absurd-usage": (b'{"tool": "find_customer", "args": {"query": "Jon Park"}, "usage": {"input_tokens": '
                     + str(10**18).encode() + b"}}", f"usage.input_tokens: {10**18} tokens"),
}

SCRIPT = """\
import json, sys
first = open(sys.argv[1], 'rb').read()
errors = []
for i, line in enumerate(sys.stdin):
    obs = json.loads(line)
    if obs.get('type') == 'end':
        break
    if obs.get('last_status') == 'error':
        errors.append(obs['last_result']['error'])
    if i == 0:
        sys.stdout.buffer.write(first + b'\\n')
    elif i == 1:
        sys.stdout.write(json.dumps({'tool': 'find_customer', 'args': {'query': 'Jon Park'}}) + '\\n')
    else:
        sys.stdout.write(json.dumps({'tool': 'decline', 'args': {'reason': ' | '.join(errors)[:2000]}}) + '\\n')
    sys.stdout.flush()
"""


def _play_process(scenario, tmp_path: Path, line: bytes):
    (tmp_path / "first.json").write_bytes(line)
    (tmp_path / "agent.py").write_text(SCRIPT)
    factory = build_agent_factory(f"cmd:{sys.executable} {tmp_path / 'agent.py'} {tmp_path / 'first.json'}")
    with TimeGuard() as guard:
        return play(Environment(scenario, 0, agent_name="cmd", guard=guard), factory)


class TestAbsurdLinesFromAProcess:
    @pytest.mark.parametrize("kind", sorted(ABSURD_LINES))
    def test_error_result_the_process_reads(self, scenario, tmp_path: Path, kind: str) -> None:
        """A line that is JSON but absurd comes back to the process as an error it reads; its next call works."""
        line, problem = ABSURD_LINES[kind]
        episode = _play_process(scenario, tmp_path, line)
        assert (episode.stop_reason, episode.outcome, episode.error) == ("terminal", "decline", None)
        assert [(e.kind, e.status) for e in episode.events] == [("invalid", "error"), ("read", "ok"),
                                                                ("terminal", "ok")]
        assert episode.events[0].args["refused"].startswith(problem)
        assert f"Refused the action without running it: {problem}" in episode.events[2].args["reason"]

    def test_a_line_that_is_not_json_is_still_fatal(self, scenario, tmp_path: Path) -> None:
        """A line that is plainly not JSON (here cut short) stays the agent's error, as before."""
        episode = _play_process(scenario, tmp_path, b'{"tool": "get_plan", "args": [1, 2')
        assert episode.stop_reason == "agent_error" and "not JSON" in (episode.error or "")


class TestLimits:
    def test_every_real_call_is_within_the_limits(self) -> None:
        """The largest real calls pass: 60 instalments with Decimal amounts, a long message, a 64-bit id."""
        instalments = tuple({"due_date": date(2026, 1 + m % 12, 1), "amount": Decimal("333.34")} for m in range(60))
        assert check_action({"tool": "set_schedule", "args": {"plan_id": "pln_010", "instalments": instalments},
                             "usage": {"input_tokens": 120_000, "output_tokens": 4_000}}) is None
        assert check_action({"tool": "send_message", "args": {"customer_id": "cus_010", "subject": "Your plan",
                                                              "body": "Dear customer,\n" * 3_000}}) is None
        assert check_action({"tool": "apply_payment", "args": {"plan_id": "p", "amount": 2**64 - 1,
                                                               "idempotency_key": uuid.uuid4()}}) is None
        assert check_action(None) is None and check_action({"stop": True}) is None

    def test_reference_runs_refuse_nothing(self) -> None:
        """Every scenario's reference solution plays with no action refused."""
        factory = build_agent_factory("reference")
        for sc in load_suite(None):
            episode = play(Environment(sc, 0, agent_name="reference"), factory)
            assert not [e for e in episode.events if e.kind == "invalid"], sc.id

    @pytest.mark.parametrize(("name", "at_limit", "past_limit"), [
        ("MAX_INT_DIGITS", 10**MAX_INT_DIGITS - 1, 10**MAX_INT_DIGITS),
        ("MAX_STRING_CHARS", "s" * MAX_STRING_CHARS, "s" * (MAX_STRING_CHARS + 1)),
        ("MAX_NODES", [0] * (MAX_NODES - 1), [0] * MAX_NODES),
        ("MAX_DEPTH", _deep(MAX_DEPTH - 1)["args"], _deep(MAX_DEPTH)["args"]),
        ("MAX_TEXT_CHARS", ["t" * 50_000] * (MAX_TEXT_CHARS // 50_000), ["t" * 50_000] * (MAX_TEXT_CHARS // 50_000)
         + ["t"]),
    ])
    def test_each_limit_is_inclusive(self, name: str, at_limit: Any, past_limit: Any) -> None:
        """A value exactly at a limit passes and one step past it is refused."""
        assert check_action(at_limit) is None, name
        assert check_action(past_limit) is not None, name

    def test_no_recursion_whatever_the_depth(self) -> None:
        """A list nested far deeper than Python's recursion limit is refused, not a RecursionError."""
        deep: list[Any] = []
        for _ in range(sys.getrecursionlimit() * 20):
            deep = [deep]
        assert check_action(deep) == "[0][0][0][0][0]…[0][0][0]: nested more than 32 levels deep; at most 32"

    def test_shared_values_are_not_cycles(self) -> None:
        """The same dict twice in a list is fine (JSON can hold it); only a container inside itself is a cycle."""
        item = {"due_date": "2026-01-01", "amount": "1.00"}
        assert check_action({"tool": "set_schedule", "args": {"plan_id": "p", "instalments": [item, item]}}) is None

    def test_refused_passes_its_problem_through(self) -> None:
        """A transport's Refused action is refused with exactly its problem."""
        assert plain_action(Refused("the action: nested too deep")) == (None, "the action: nested too deep")


class Colour(enum.Enum):
    FIRST = "first"


class Level(enum.IntEnum):
    THREE = 3


class TestPlainCopy:
    def test_python_values_become_what_the_event_log_always_held(self) -> None:
        """Decimal and integers past 64 bits become their decimal text; tuples lists; dates, UUIDs and enums text."""
        plain, problem = plain_action({"tool": "t", "args": {
            "a": Decimal("333.340"), "b": 2**70, "c": -(2**63), "d": (1, 2), "e": date(2026, 3, 1),
            "f": uuid.UUID(int=5), "g": Colour.FIRST, "h": Level.THREE, "i": 1.5, "j": None, "k": True}})
        assert problem is None
        assert plain["args"] == {"a": "333.340", "b": str(2**70), "c": -(2**63), "d": [1, 2], "e": "2026-03-01",
                                 "f": "00000000-0000-0000-0000-000000000005", "g": "first", "h": 3, "i": 1.5,
                                 "j": None, "k": True}
        assert type(plain["args"]["h"]) is int

    def test_subclasses_are_read_through_their_base(self) -> None:
        """A dict subclass whose methods raise is copied through dict itself, keys in order, into a plain dict."""
        args = Sneaky(plan_id="pln_010", extra=[1])
        plain, problem = plain_action({"tool": "get_plan", "args": args})
        assert problem is None and type(plain["args"]) is dict and list(plain["args"]) == ["plan_id", "extra"]
        env = make(SID, 0)
        env.reset()
        obs, _ = env.step(Sneaky(tool="find_customer", args={"query": "Jon Park"}))
        assert obs.last_status == "ok"


    def test_an_object_that_claims_to_be_a_dict_is_judged_by_its_real_type(self) -> None:
        """An object whose __class__ says dict is refused by what it really is, and counts no tokens."""
        liar = type("Liar", (), {"__class__": dict})()
        assert isinstance(liar, dict)
        assert check_action(liar) == ("the action: a value of type Liar; expected JSON values (object, array, string, "
                                      "number, true, false or null)")
        env = make(SID, 0)
        env.reset()
        obs, _ = env.step({**FIND, "usage": liar})
        assert obs.last_status == "error" and env.episode().counters["input_tokens"] == 0


class TestWorldNeverCrashes:
    def test_call_and_invalid_take_anything(self) -> None:
        """World.call and World.invalid, called directly, record a refusal for what no action may hold."""
        env = make(SID, 0)
        env.reset()
        w = env.world
        assert w.call("get_plan", _cycle()["args"]).args == {
            "refused": "args.again: the value contains itself; JSON cannot hold a cycle"}
        assert w.invalid(BadRepr()).args["refused"].startswith("the action: a value of type BadRepr")
        assert w.invalid(_deep(100_000)).kind == "invalid"
        unknown = w.call(10**5000, {})
        assert unknown.tool == "<a value of type int>" and unknown.status == "error"
        assert w.call("get_plan", {"plan_id": 2**70}).args == {"plan_id": str(2**70)}  # as it always was


# -- the quick copy: the same answer as the careful walk, on every value -------------------------------------

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simworld._world.actions import _walk, plain_value  # noqa: E402

_scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.integers()
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
            | st.text(alphabet=st.characters(codec="ascii"), min_size=4000, max_size=4200)
            | st.decimals(allow_nan=False, places=2) | st.dates())


class _Count(enum.IntEnum):
    TWO = 2


class _Word(enum.StrEnum):
    YES = "yes"


class _Colour(enum.Enum):
    RED = 1
    PAIR = (1, 2)


class _Text(str):
    pass


class _Number(int):
    pass


class _Map(dict):
    pass


# What orjson writes as something else, or hands on: members of enums, a UUID, subclasses, a piece of raw JSON.
_others = st.sampled_from([_Count.TWO, _Word.YES, _Colour.RED, _Colour.PAIR, uuid.UUID(int=7), _Text("pln_1"),
                           _Number(5), _Map(a=1), orjson.Fragment(b"[1]"), datetime.datetime(2026, 5, 1, 9)])
_values = st.recursive(_scalars | _others, lambda inner: st.lists(inner, max_size=6) | st.tuples(inner, inner)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=6), max_leaves=60)


@settings(max_examples=400, deadline=None)
@given(_values)
@example(2**63 - 1)
@example({"a": [2**63, -(2**63) - 1, 2**64, 2**65]})
@example({"n": _Count.TWO, "w": [_Word.YES], "c": _Colour.RED, "p": _Colour.PAIR, "t": (1, "x")})
@example({"é": "naïve", "x": "\ud800"})
@example([1.0, -0.0, float("inf")])
@example({"k" * 5000: 1})
@example({"a": ["x" * 4000] * 17, "b": [True, None, 1, "y"]})  # over the quick copy's text budget, key by key
@example([{"k": "v" * 4096}, {"k" * 4097: 0}])
def test_the_quick_copy_is_the_careful_walk(value: Any) -> None:
    """Whatever the quick path copies, it copies as the careful walk does; what it cannot, the walk answers."""
    assert plain_value(value) == _walk(value, "")
    assert repr(plain_value(value)) == repr(_walk(value, ""))  # -0.0 against 0.0, int against its text


def test_the_quick_copy_hands_deep_wide_and_self_containing_values_to_the_walk() -> None:
    deep: Any = "x"
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    wide = {"args": list(range(MAX_NODES + 1))}
    for value, words in ((deep, "nested more than"), (cycle, "contains itself"), (wide, "more than")):
        copy, problem = plain_value(value)
        assert copy is None and problem is not None and words in problem, problem
