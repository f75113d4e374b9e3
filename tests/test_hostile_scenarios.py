"""Hostile scenario files: every malformed task.json is one clear line at load, never a traceback or a silent pass."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from helpers import ROOT, copy_suite, simworld

from simworld._scenario.scenario import load_scenario
from simworld._scenario.schemacheck import first_error, load_schema
from simworld.errors import ScenarioError

SID = "waive-small-fee"
BASE = orjson.loads((ROOT / "scenarios" / SID / "task.json").read_bytes())
SCHEMA = load_schema("task.schema.json")
_WRONG = {"object": [5, "text", []], "array": [5, "text", {}], "string": [5, [], {}], "integer": ["abc", 2.9, True],
          "number": ["nan", [], True], "boolean": ["yes", 1]}


def _corpus() -> list[tuple[str, dict[str, Any]]]:
    """(label, task.json) for every key of the schema: wrong type, out of range, missing, extra.

    Keys the base file lacks are added with a wrong value (they are optional, so wrong only when present).
    """
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(schema: dict[str, Any], path: list[str]) -> None:
        kinds = [schema["type"]] if "type" in schema else [alt["type"] for alt in schema.get("oneOf", [])
                                                           if "type" in alt]
        if not path:
            for key, sub in schema["properties"].items():
                if key != "id":  # the id must also equal the directory name: covered below
                    walk(sub, [key])
            for key in schema.get("required", []):
                out.append((f"missing {key}", _drop([key])))
            return
        for value in (_WRONG.get(kinds[0], []) if len(kinds) == 1 else []):
            out.append((f"{'.'.join(path)}={value!r}", _set(path, value)))
        items = schema.get("items", {})
        if schema.get("type") == "array" and "type" in items:
            out.append((f"{'.'.join(path)}[0] wrong", _set(path, [_WRONG[items["type"]][0]])))
        if "enum" in schema:
            out.append((f"{'.'.join(path)}=<not in enum>", _set(path, "no-such-value")))
        for bound, delta in (("minimum", -1), ("exclusiveMinimum", 0), ("maximum", 1)):
            if bound in schema:
                out.append((f"{'.'.join(path)} {bound}", _set(path, schema[bound] + delta)))
        if schema.get("type") == "object" and "properties" in schema:
            if schema.get("additionalProperties") is False:
                out.append((f"{'.'.join(path)}+extra", _set([*path, "zzz_extra"], 1, parent_default={})))
            for key in schema.get("required", []):
                out.append((f"{'.'.join(path)} missing {key}", _drop([*path, key])))
            for key, sub in schema["properties"].items():
                walk(sub, [*path, key])

    walk(SCHEMA, [])
    out.append(("top-level extra", {**BASE, "colour": "blue"}))
    out.append(("requires min > max", {**BASE, "requires": {"steps": {"min": 10, "max": 2}}}))
    out.append(("all weights 0", {**BASE, "weights": dict.fromkeys(SCHEMA["properties"]["weights"]["properties"],
                                                                    0)}))
    out.append(("id not the directory", {**BASE, "id": "another-id"}))
    return out


def _set(path: list[str], value: Any, parent_default: Any = None) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    node = data
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {} if parent_default is None else parent_default
        node = node[key]
    node[path[-1]] = value
    return data


def _drop(path: list[str]) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node.pop(path[-1], None)
    return data


CORPUS = _corpus()


@pytest.fixture()
def scenario_dir(tmp_path: Path) -> Path:
    return copy_suite(tmp_path, SID) / SID


class TestCorpus:
    def test_corpus_is_large(self) -> None:
        """The corpus covers every key: well over a hundred malformed files."""
        assert len(CORPUS) > 100

    @pytest.mark.parametrize(("label", "data"), CORPUS, ids=[c[0] for c in CORPUS])
    def test_one_line_naming_the_file(self, scenario_dir: Path, label: str, data: dict[str, Any]) -> None:
        """Each malformed task.json fails at load with one line that names the file."""
        (scenario_dir / "task.json").write_bytes(orjson.dumps(data))
        with pytest.raises(ScenarioError) as info:
            load_scenario(scenario_dir)
        message = str(info.value)
        assert "\n" not in message and str(scenario_dir / "task.json") in message, message
        assert "Traceback" not in message

    @pytest.mark.parametrize(("label", "data"), [c for c in CORPUS if "zzz" not in c[0]],
                             ids=[c[0] for c in CORPUS if "zzz" not in c[0]])
    def test_checker_agrees_with_jsonschema(self, label: str, data: dict[str, Any]) -> None:
        """simworld's schema checker finds a problem exactly when jsonschema does."""
        theirs = next(iter(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)), None)
        assert (first_error(data, SCHEMA) is None) == (theirs is None), label

    def test_every_bundled_task_fits_the_schema(self) -> None:
        """The published schema admits every bundled scenario, and is itself a valid draft 2020-12 schema."""
        jsonschema.Draft202012Validator.check_schema(SCHEMA)
        for task in sorted((ROOT / "scenarios").glob("*/task.json")):
            assert first_error(json.loads(task.read_text()), SCHEMA) is None, task

    def test_schema_keys_are_the_loader_keys(self) -> None:
        """The schema lists exactly the keys the loader accepts (one format, one description)."""
        from simworld._grading.contract import PARTS
        from simworld._scenario.scenario import TASK_KEYS

        assert set(SCHEMA["properties"]) == set(TASK_KEYS)
        assert set(SCHEMA["properties"]["weights"]["properties"]) == set(PARTS)


class TestFromTheCommandLine:
    @pytest.mark.parametrize("change", [{"budget": 5}, {"budget": {"max_steps": "abc"}}, {"params": []},
                                        {"tools": 5}, {"target": {"customer": "cus_001", "policy": "pol_001",
                                                                  "plan": [1]}},
                                        {"perturb": {"premium_jitter": "lots"}}, {"budget": {"timeout_s": "nan"}},
                                        {"budget": {"max_steps": 2.9}}])
    def test_exit_2_one_line_nothing_written(self, tmp_path: Path, change: dict[str, Any]) -> None:
        """The shapes that gave tracebacks are one line on stderr, exit 2, and no run directory."""
        suite = copy_suite(tmp_path, SID)
        (suite / SID / "task.json").write_bytes(orjson.dumps({**BASE, **change}))
        done = simworld("run", "--suite", str(suite), "--out", str(tmp_path / "o"))
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "task.json" in done.stderr and not (tmp_path / "o").exists()

    def test_prompt_not_utf8(self, scenario_dir: Path) -> None:
        """A prompt.md that is not UTF-8 is named, with the fix."""
        (scenario_dir / "prompt.md").write_bytes(b"caf\xe9 \xff")
        with pytest.raises(ScenarioError, match=r"prompt\.md: not UTF-8"):
            load_scenario(scenario_dir)

    @pytest.mark.parametrize("source", ["def grade(episode:\n", "raise RuntimeError('at import')\n"])
    def test_grader_module_that_cannot_import(self, scenario_dir: Path, source: str) -> None:
        """A custom grader module with a syntax error, or one that raises at import, is one line naming it."""
        (scenario_dir.parent.parent / "broken_graders_mod.py").write_text(source)
        data = {**BASE, "graders": ["broken_graders_mod:grade"]}
        (scenario_dir / "task.json").write_bytes(orjson.dumps(data))
        with pytest.raises(ScenarioError, match="importing 'broken_graders_mod'.*failed") as info:
            load_scenario(scenario_dir)
        assert "\n" not in str(info.value)

    def test_snapshot_with_a_dangling_reference(self, scenario_dir: Path) -> None:
        """A snapshot plan that points at a missing policy is named at load."""
        snap = scenario_dir.parent.parent / "snapshots" / "small.json"
        data = orjson.loads(snap.read_bytes())
        data["plans"][0]["policy_id"] = "pol_missing"
        snap.write_bytes(orjson.dumps(data))
        with pytest.raises(Exception, match="policy_id='pol_missing', which is not in policies"):
            load_scenario(scenario_dir)

    def test_empty_suite(self, tmp_path: Path) -> None:
        """--suite of an empty directory is exit 2 with one line, not '0/0 passed'."""
        (tmp_path / "empty").mkdir()
        done = simworld("run", "--suite", str(tmp_path / "empty"), "--out", str(tmp_path / "o"))
        assert done.returncode == 2 and "holds no scenario" in done.stderr


def _to_dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _oversized(path: Path) -> None:
    path.write_bytes(b"{" + b" " * (5 * 1024 * 1024) + b"}")


class TestUnboundedFiles:
    """A scenario file that never ends, blocks or is huge fails at once: one line, exit 2, nothing written."""

    @pytest.mark.parametrize(("name", "make", "says"), [
        ("task.json", _to_dev_zero, "character device"),
        ("prompt.md", _to_dev_zero, "character device"),
        ("solution.jsonl", _to_dev_zero, "character device"),
        ("../../snapshots/small.json", _to_dev_zero, "character device"),
        ("prompt.md", _fifo, "FIFO"),
        ("task.json", _fifo, "FIFO"),
        ("task.json", _oversized, "at most 4,194,304 bytes (4 MiB)"),
        ("solution.jsonl", _oversized, "at most 1,048,576 bytes (1 MiB)"),
    ], ids=["task-zero", "prompt-zero", "solution-zero", "snapshot-zero", "prompt-fifo", "task-fifo",
            "task-oversized", "solution-oversized"])
    @pytest.mark.parametrize("command", ["run", "check", "show"])
    def test_one_line_exit_2(self, tmp_path: Path, name: str, make: Any, says: str, command: str) -> None:
        """run, check and show each refuse the file by name (a hang fails the subprocess timeout)."""
        suite = copy_suite(tmp_path, SID)
        target = suite / SID / name
        make(target)
        args = {"run": ["run", "--suite", str(suite), "--out", str(tmp_path / "o")],
                "check": ["check", "--suite", str(suite), "--seeds", "0..0"],
                "show": ["show", SID, "--suite", str(suite)]}[command]
        done = simworld(*args, timeout=30)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
        assert target.name in done.stderr and says in done.stderr, done.stderr
        assert not (tmp_path / "o").exists()

    def test_read_stops_past_the_limit(self, tmp_path: Path) -> None:
        """A regular file whose stated size is under the limit but whose content is not is refused mid-read."""
        from simworld._world.files import read_bounded

        proc = Path("/proc/self/maps")  # a regular file that states size 0 and holds kilobytes
        if not proc.exists():
            pytest.skip("needs Linux /proc")
        assert proc.stat().st_size == 0
        with pytest.raises(ScenarioError, match=r"more than 10 bytes; a file here may hold at most 10 bytes"):
            read_bounded(proc, 10, ScenarioError)
        (tmp_path / "f").write_bytes(b"x" * 10)
        assert read_bounded(tmp_path / "f", 10, ScenarioError) == b"x" * 10


class TestFromReferences:
    @pytest.mark.parametrize("ref", ['"oops"', "[0]", '[0, "id", 1]', '["0", "id"]', '[-1, "id"]', "[true, \"id\"]",
                                     "[0, 5]", '{"step": 0}'])
    def test_malformed_from_is_a_load_error(self, scenario_dir: Path, ref: str) -> None:
        """A $from that is not [STEP, "dotted.path"] fails at load naming the file, line and expected form."""
        sol = scenario_dir / "solution.jsonl"
        lines = sol.read_text().splitlines()
        lines.insert(1, '{"tool": "get_customer", "args": {"customer_id": {"$from": ' + ref + '}}}')
        sol.write_text("\n".join(lines) + "\n")
        with pytest.raises(ScenarioError) as info:
            load_scenario(scenario_dir)
        message = str(info.value)
        assert message.startswith(f"{sol}:2 (step 1): $from ") and '[STEP, "dotted.path"]' in message, message

    def test_from_a_later_step_is_a_load_error(self, scenario_dir: Path) -> None:
        """A $from naming its own step or a later one cannot resolve: refused at load, by line and step."""
        sol = scenario_dir / "solution.jsonl"
        lines = sol.read_text().splitlines()
        lines.insert(1, '{"tool": "get_customer", "args": {"customer_id": {"$from": [1, "id"]}}}')
        sol.write_text("\n".join(lines) + "\n")
        with pytest.raises(ScenarioError, match=r"solution\.jsonl:2 \(step 1\): \$from \[1, 'id'\] names step 1, "
                                                r"but this is step 1"):
            load_scenario(scenario_dir)

    def test_from_run_as_a_user_would(self, tmp_path: Path) -> None:
        """simworld run on a suite whose solution has {"$from": "oops"}: one line, exit 2, no traceback."""
        suite = copy_suite(tmp_path, SID)
        sol = suite / SID / "solution.jsonl"
        sol.write_text('{"tool": "get_plan", "args": {"plan_id": {"$from": "oops"}}}\n' + sol.read_text())
        done = simworld("run", "--suite", str(suite), "--out", str(tmp_path / "o"), timeout=60)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "solution.jsonl:1 (step 0): $from 'oops' is not a reference" in done.stderr, done.stderr


class _PathLike:
    """An os.PathLike that is not a Path (as a user's own path class would be)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return str(self.path)


class TestPathArguments:
    @pytest.mark.parametrize("kind", [str, _PathLike, Path])
    def test_public_api_takes_str_and_pathlike(self, tmp_path: Path, kind: Any) -> None:
        """load_suite, load_scenario and run_suite take a str or any os.PathLike wherever they take a path."""
        import simworld

        suite = copy_suite(tmp_path, SID)
        (loaded,) = simworld.load_suite(kind(suite))
        assert loaded.id == SID and loaded.path == suite / SID
        assert simworld.load_scenario(kind(suite / SID)).id == SID
        out = tmp_path / "o"
        result = simworld.run_suite([loaded], [0], "reference", simworld.build_agent_factory("reference"), kind(out))
        assert result.passed == 1 and (out / "results.jsonl").is_file()

    @pytest.mark.parametrize(("call", "name"), [("load_suite", "suite"), ("load_scenario", "directory")])
    def test_not_a_path_names_the_argument(self, call: str, name: str) -> None:
        """A path argument of another type is a TypeError naming the argument, its value and its type."""
        import simworld

        with pytest.raises(TypeError, match=rf"Expected {name} as a str or os.PathLike but got {name}=5 \(type=int\)"):
            getattr(simworld, call)(5)


class TestTemplates:
    @pytest.mark.parametrize("placeholder", ["{customer_name:>999999999}", "{customer_name!r}",
                                             "{customer_name.upper}", "{customer_name[0]}"])
    def test_prompt_placeholder_must_be_plain(self, scenario_dir: Path, placeholder: str) -> None:
        """A format spec, conversion, attribute or index in a prompt is a load-time error."""
        (scenario_dir / "prompt.md").write_text(f"Hello {placeholder}")
        with pytest.raises(ScenarioError, match="only plain"):
            load_scenario(scenario_dir)

    def test_script_placeholder_must_be_plain(self, tmp_path: Path) -> None:
        """A scripted agent file with a format spec fails before any episode runs (exit 2, nothing written)."""
        script = tmp_path / "s.jsonl"
        script.write_text('{"tool": "decline", "args": {"reason": "{customer_name:>999999999}"}}\n')
        done = simworld("run", "--scenario", SID, "--agent", f"scripted:{script}", "--out", str(tmp_path / "o"))
        assert done.returncode == 2 and "only plain" in done.stderr and not (tmp_path / "o").exists()

    def test_prompt_over_the_size_limit(self, scenario_dir: Path) -> None:
        """A prompt.md over 64 KiB is refused by name."""
        (scenario_dir / "prompt.md").write_text("x" * (64 * 1024 + 1))
        with pytest.raises(ScenarioError, match="at most 65,536"):
            load_scenario(scenario_dir)


class TestGraderSignature:
    @pytest.mark.parametrize(("source", "word"), [
        ("def grade(episode, *args):\n    pass\n", "*args"),
        ("def grade(episode, **kwargs):\n    pass\n", "**kwargs"),
        ("def grade(episode, agent_notes):\n    pass\n", "not a grader input"),
        ("def grade(episode, transcript=None):\n    pass\n", "transcript"),
    ])
    def test_honest_mistakes_refused(self, scenario_dir: Path, source: str, word: str) -> None:
        """*args, **kwargs, a parameter no one supplies, and a transcript parameter are refused at load."""
        name = f"sig_graders_{next(_ids)}"
        (scenario_dir.parent.parent / f"{name}.py").write_text(source)
        (scenario_dir / "task.json").write_bytes(orjson.dumps({**BASE, "graders": [f"{name}:grade"]}))
        with pytest.raises(ScenarioError, match=re.escape(word)):
            load_scenario(scenario_dir)


_ids = iter(range(10**6))
