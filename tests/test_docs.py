"""The documentation: the site builds with no warning, and every example marked runnable runs as written.

The convention (docs/getting-started.md's readers never see it; writers of pages do):

- ``<!-- run -->`` on the line just above a fenced block runs it: ```bash blocks with
  ``bash -euo pipefail``, ```python blocks with ``python``, and it must exit 0;
- ``<!-- run: exit=N -->`` expects exit status N instead;
- ``<!-- file: NAME -->`` writes the block's text to NAME for later blocks (not run);
- ``slow`` among a run marker's words (``<!-- run: slow exit=1 -->``) marks a block of more
  than a few seconds: its page then runs only in the full suite (``-m slow``).

Each page (README.md and every docs/**/*.md) gets a scratch directory of its own, fresh,
which is the blocks' working directory and on their PYTHONPATH, and which holds the
repository's examples/ (as a clone's root does); a page's blocks run in order, so a later
block reads what an earlier one wrote. Unmarked blocks are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import attrs
import orjson
import pytest
from helpers import ROOT, simworld

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
MAX_README_WORDS = 1200
#: Seconds one block may take (a slow one, the most).
BLOCK_TIMEOUT = 900
#: Phrases of a changelog, not of a guide: what changed goes in CHANGELOG.md.
HISTORY = ("before the speed work", "the previous release", "the tree before", "in the previous version",
           "used to be", "was fixed in")

MARKER = re.compile(r"^<!--\s*(run|file)\s*(?::\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)")


@attrs.frozen
class Block:
    """One marked fenced block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    kind: str  # "run" or "file"
    lang: str
    text: str
    exit: int = 0
    slow: bool = False
    name: str = ""  # a file block's file name

    @property
    def where(self) -> str:
        return f"{_name(self.page)}:{self.line}"


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def parse_marker(kind: str, args: str | None, where: str) -> dict[str, object]:
    """The options of a ``run``/``file`` marker, or an error naming the bad word and what is expected."""
    if kind == "file":
        if not args or not re.fullmatch(r"[\w./-]+", args) or ".." in args or args.startswith("/"):
            raise ValueError(f"{where}: <!-- file: NAME --> needs a relative file name, got {args!r}")
        return {"name": args}
    options: dict[str, object] = {}
    for word in (args or "").split():
        if word == "slow":
            options["slow"] = True
        elif re.fullmatch(r"exit=\d+", word):
            options["exit"] = int(word.split("=")[1])
        else:
            raise ValueError(f"{where}: unknown word {word!r} in a run marker; expected 'slow' or 'exit=N'")
    return options


def blocks(page: Path) -> list[Block]:
    """The marked blocks of ``page``, in order; a marker not directly above a fenced block is an error."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    pending: tuple[str, dict[str, object], int] | None = None
    i = 0
    while i < len(lines):
        where = f"{_name(page)}:{i + 1}"
        marker = MARKER.match(lines[i])
        fence = FENCE.match(lines[i])
        if pending is not None and not fence:
            raise ValueError(f"{_name(page)}:{pending[2]}: a <!-- {pending[0]} --> marker must be on the "
                             f"line just above a fenced block")
        if marker:
            pending = (marker.group(1), parse_marker(marker.group(1), marker.group(2), where), i + 1)
        elif fence:
            ticks, lang = fence.group(1), fence.group(2)
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == ticks), None)
            if end is None:
                raise ValueError(f"{where}: a fenced block that is never closed")
            if pending is not None:
                kind, options, _ = pending
                if kind == "run" and lang not in ("bash", "python"):
                    raise ValueError(f"{where}: a run marker above a {lang or 'plain'!r} block; only bash and "
                                     f"python blocks run")
                found.append(Block(page, i + 1, kind, lang, "\n".join(lines[i + 1:end]) + "\n",
                                   **options))  # type: ignore[arg-type]
                pending = None
            i = end
        i += 1
    if pending is not None:
        raise ValueError(f"{_name(page)}:{pending[2]}: a marker at the end of the page, above no block")
    return found


def run_page(page_blocks: list[Block], scratch: Path) -> None:
    """Run a page's blocks in order in ``scratch``; fail with the block, its status and output on a mismatch."""
    bin_dir = str(Path(sys.executable).parent)
    if not (scratch / "examples").exists():
        (scratch / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           # the scratch directory, not the repository: the examples run against simworld as installed, as a
           # user's do (the repository on the path would shadow an installed package's registry names, Inspect's)
           "PYTHONPATH": os.pathsep.join(p for p in (str(scratch), os.environ.get("PYTHONPATH")) if p),
           "NO_COLOR": "1"}
    for n, block in enumerate(page_blocks):
        if block.kind == "file":
            (scratch / block.name).parent.mkdir(parents=True, exist_ok=True)
            (scratch / block.name).write_text(block.text, encoding="utf-8")
            continue
        script = scratch / f".block-{n}.{'sh' if block.lang == 'bash' else 'py'}"
        script.write_text(block.text, encoding="utf-8")
        argv = ["bash", "-euo", "pipefail", str(script)] if block.lang == "bash" else [sys.executable, str(script)]
        done = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == block.exit, (
            f"{block.where}: exited {done.returncode}, expected {block.exit}\n--- block\n{block.text}"
            f"--- stdout (end)\n{done.stdout[-3000:]}\n--- stderr (end)\n{done.stderr[-3000:]}")


def _page_params() -> list[object]:
    params: list[object] = []
    for page in PAGES:
        try:
            found = blocks(page)
        except ValueError:
            found = []  # TestConvention names the error
        if any(b.kind == "run" for b in found):
            marks = [pytest.mark.slow] if any(b.slow for b in found) else []
            params.append(pytest.param(page, id=str(page.relative_to(ROOT)), marks=marks))
    return params


class TestConvention:
    def test_every_marker_is_well_formed(self) -> None:
        """Every run/file marker has known words and sits just above a bash or python block."""
        errors = []
        for page in PAGES:
            try:
                blocks(page)
            except ValueError as exc:
                errors.append(str(exc))
        assert not errors, "\n".join(errors)

    def test_a_marker_away_from_its_block_is_refused(self, tmp_path: Path) -> None:
        """A marker with a line between it and the block, or an unknown word, is an error, not a silent skip."""
        for text, says in (("<!-- run -->\n\n```bash\ntrue\n```\n", "just above"),
                           ("<!-- run: slwo -->\n```bash\ntrue\n```\n", "unknown word 'slwo'"),
                           ("<!-- run -->\n```json\n{}\n```\n", "only bash and python")):
            probe = tmp_path / "probe.md"
            probe.write_text(text)
            with pytest.raises(ValueError, match=says):
                blocks(probe)

    def test_the_parser_reads_options_and_files(self, tmp_path: Path) -> None:
        """exit=N, slow and file: NAME are read; unmarked blocks are left out."""
        probe = tmp_path / "probe.md"
        probe.write_text("```bash\nnot run\n```\n<!-- file: a.py -->\n```python\nx = 1\n```\n"
                         "<!-- run: slow exit=1 -->\n```bash\nfalse\n```\n")
        found = blocks(probe)
        assert [(b.kind, b.name, b.exit, b.slow) for b in found] == [("file", "a.py", 0, False),
                                                                     ("run", "", 1, True)]
        assert found[0].text == "x = 1\n"


@pytest.mark.parametrize("page", _page_params())
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    """Every runnable block of the page exits as its marker says, in the page's own fresh scratch directory."""
    run_page(blocks(page), tmp_path)


class TestRunner:
    def test_a_failing_block_fails(self, tmp_path: Path) -> None:
        """A block that exits otherwise than its marker says fails the page, naming the block and its output."""
        page = tmp_path / "page.md"
        page.write_text("<!-- run -->\n```bash\necho to stderr >&2\nfalse\necho never\n```\n")
        with pytest.raises(AssertionError, match=r"exited 1, expected 0(.|\n)*to stderr"):
            run_page(blocks(page), tmp_path)

    def test_blocks_share_the_scratch_directory(self, tmp_path: Path) -> None:
        """A file block is written for later blocks; python and bash blocks run in order in one directory."""
        page = tmp_path / "page.md"
        page.write_text("<!-- file: mod.py -->\n```python\nVALUE = 41\n```\n"
                        "<!-- run -->\n```python\nimport mod\nopen('out.txt', 'w').write(str(mod.VALUE + 1))\n```\n"
                        "<!-- run: exit=3 -->\n```bash\ntest \"$(cat out.txt)\" = 42 && exit 3\n```\n")
        run_page(blocks(page), tmp_path)


def _mkdocs_config() -> dict[str, object]:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may hold !!python/name tags (none now); read them as plain strings.
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: str(node.value))
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506


def _nav_pages() -> set[str]:
    pages: set[str] = set()

    def walk(item: object) -> None:
        if isinstance(item, str):
            pages.add(item)
        elif isinstance(item, dict):
            for value in item.values():
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(_mkdocs_config()["nav"])
    return pages


class TestSite:
    def test_strict_build(self, tmp_path: Path) -> None:
        """`mkdocs build --strict` passes: no broken link or anchor, no page outside the nav, no warning."""
        try:
            import mkdocs  # noqa: F401
        except ImportError:
            pytest.fail("mkdocs is not installed; install the docs tools with: pip install '.[docs]'")
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                               str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
        warnings = [x for x in done.stderr.splitlines() if x.startswith(("WARNING", "ERROR"))]
        assert done.returncode == 0 and not warnings, done.stdout + done.stderr
        assert (tmp_path / "site" / "reference" / "cli" / "index.html").read_text().count("simworld run") > 1
        api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
        import simworld

        missing = [name for name in simworld.__all__ if f'id="simworld.{name}"' not in api]
        assert not missing, f"the API reference lacks {missing}"

    def test_every_page_is_in_the_nav(self) -> None:
        """Every Markdown page under docs/ is in mkdocs.yml's nav, and every nav entry is a page."""
        on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
        nav = _nav_pages()
        assert on_disk - nav == set(), "pages missing from mkdocs.yml's nav"
        assert nav - on_disk == set(), "nav entries with no page"

    def test_site_url_is_the_project_url(self) -> None:
        """mkdocs.yml's site_url is the base the CLI links to and pyproject's Documentation URL."""
        import tomllib

        from simworld._edges.cli import DOCS_URL

        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        assert _mkdocs_config()["site_url"] == DOCS_URL == project["urls"]["Documentation"]


class TestReadme:
    def test_short(self) -> None:
        """README.md is a few minutes' read: at most 1,200 words (counted as `wc -w` counts them)."""
        words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
        assert words <= MAX_README_WORDS, f"README.md has {words} words; the limit is {MAX_README_WORDS}"

    def test_links_resolve(self) -> None:
        """Every relative link and image in README.md names a file of the repository."""
        text = (ROOT / "README.md").read_text(encoding="utf-8")
        targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
        assert targets, "README.md links to nothing"
        missing = [t for t in targets if t and not (ROOT / t).exists()]
        assert not missing, missing

    def test_no_history_in_the_guide(self) -> None:
        """README and the guide say how things are; what changed goes in CHANGELOG.md."""
        found = [(str(p.relative_to(ROOT)), phrase) for p in PAGES if p.name != "changelog.md"
                 for phrase in HISTORY if phrase in " ".join(p.read_text(encoding="utf-8").lower().split())]
        assert not found, found


#: A path of one machine (a home or a workspace) as a file of the project might name it.
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:work|root|home|Users)/[\w.-]")


class TestAboutItself:
    """The project names nothing of the machine it was measured or written on."""

    def test_no_file_names_a_machine_path(self) -> None:
        found = []
        for path in sorted(ROOT.rglob("*")):
            rel = path.relative_to(ROOT)
            if (not path.is_file() or rel.parts[0] in ("tests", "site") or rel.parts[0].startswith(".")
                    or "__pycache__" in rel.parts or path.suffix not in (".py", ".md", ".json", ".toml", ".yml",
                                                                          ".jsonl", ".txt", ".sh")):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
                      for m in MACHINE_PATH.finditer(text)]
        assert not found, found

    def test_a_result_names_its_command_without_absolute_paths(self) -> None:
        """A results file's command can be run from the repository root as it stands: its paths are the
        repository's own, relative, or a role (``BASELINE_CHECKOUT``, ``OLD_TREE``, ...)."""
        found = []
        for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
            command = orjson.loads(path.read_bytes()).get("command", "")
            found += [f"{path.name}: {word}" for word in str(command).split() if word.startswith("/")]
        assert not found, found

    def test_a_benchmark_records_its_command_without_machine_paths(self) -> None:
        """What bench_cpu and bench_startup write as their command names a directory of this repository relative
        to it and any other by its role."""
        import importlib.util

        spec = importlib.util.spec_from_file_location("_record", ROOT / "benchmarks" / "_record.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in ("bench_cpu", "bench_startup"):
            assert "from _record import commit_of, recorded_command" in (ROOT / "benchmarks" / f"{name}.py").read_text()
            command = module.recorded_command(f"benchmarks/{name}.py", [
                "--baseline", str(ROOT / "docs"), "--work", os.path.abspath(os.sep), "--out",
                str(ROOT / "benchmarks" / "results" / "x.json"), "--seeds", "3"])
            assert command == (f"python benchmarks/{name}.py --baseline docs --work WORK_DIR "
                               "--out benchmarks/results/x.json --seeds 3"), command


def _commands() -> list[str]:
    import typer

    from simworld._edges.cli import app

    def walk(command: object, prefix: str) -> list[str]:
        names = [prefix]
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            names += walk(sub, f"{prefix} {name}".strip())
        return names

    return walk(typer.main.get_command(app), "")


class TestHelpLinks:
    @pytest.mark.parametrize("command", _commands(), ids=lambda c: c or "simworld")
    def test_help_links_to_a_page_in_the_nav(self, command: str) -> None:
        """`simworld [COMMAND] --help` ends with a link into the documentation site, to a page in the nav."""
        done = simworld(*command.split(), "--help", timeout=120)
        assert done.returncode == 0, done.stderr
        links = re.findall(r"Documentation: (\S+)", done.stdout)
        assert len(links) == 1, done.stdout
        base = str(_mkdocs_config()["site_url"])
        assert links[0].startswith(base), (links[0], base)
        path = urlparse(links[0]).path[len(urlparse(base).path):].strip("/")
        page = f"{path}.md" if path else "index.md"
        assert page in _nav_pages() and (DOCS / page).exists(), (command, links[0])



class TestScreenshots:
    @pytest.mark.slow
    def test_the_script_makes_the_pictures(self, tmp_path: Path) -> None:
        """scripts/screenshot_report.py makes both pictures the docs show, at the committed ones' size, from a run."""
        import struct

        from test_report_browser import _need_browser

        _need_browser()  # a skip (or, under SIMWORLD_REQUIRE_BROWSER=1, a failure) without Chromium
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "screenshot_report.py"), "--out", str(tmp_path)],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        for name in ("report.png", "report-episode.png"):
            made, kept = (tmp_path / name).read_bytes(), (DOCS / "images" / name).read_bytes()
            assert made[:8] == b"\x89PNG\r\n\x1a\n" and len(made) > 10_000, name
            # The PNG header's width and height (bytes 16-24): the committed picture is this script's.
            assert struct.unpack(">II", made[16:24]) == struct.unpack(">II", kept[16:24]), name
