"""mkdocs hooks (mkdocs.yml ``hooks:``): the reference pages are made from the code when the site is built.

- ``<!-- cli-reference -->`` becomes every command's usage, help and options, from the typer app itself;
- ``<!-- api-reference -->`` becomes one ``::: simworld.NAME`` block (rendered by mkdocstrings from the
  docstrings) for each name in ``simworld.__all__``, grouped by the public module that holds it.

So neither page can drift from the code: a new command, option or public name appears on the next build.
"""

from __future__ import annotations

from typing import Any

CLI_MARKER = "<!-- cli-reference -->"
API_MARKER = "<!-- api-reference -->"


def cli_reference() -> str:
    """The Markdown for every ``simworld`` command, as ``--help`` shows it (less the link to these pages)."""
    import typer
    import typer.cli

    from simworld._edges.cli import _polish, app

    command = _polish(typer.main.get_command(app))
    text = typer.cli.get_docs_for_click(obj=command, ctx=typer.Context(command), name="simworld", indent=1)
    # The command list's descriptions are cut at 45 characters; the full help follows under each heading.
    return text


def api_reference() -> str:
    """``::: simworld.NAME`` for every public name, under a heading naming the public module that holds it."""
    import simworld

    # A house module's public path: the one it serves alone, else the first that names it.
    public_module = {homes[0]: path for path, homes in simworld.MODULES.items() if len(homes) == 1}
    for path, homes in simworld.MODULES.items():
        for home in homes:
            public_module.setdefault(home, path)
    groups: dict[str, list[str]] = {}
    for name in simworld.__all__:
        home = simworld._HOME.get(name, "simworld")
        groups.setdefault(public_module.get(home, home), []).append(name)
    parts = []
    for module, names in sorted(groups.items()):
        parts.append(f"## `{module}`\n")
        parts.extend(f"::: simworld.{name}\n" for name in names)
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Fill the reference pages' markers."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    return markdown


try:  # griffe comes with mkdocstrings[python] (the docs extra); the hooks above need neither.
    from griffe import Extension
except ImportError:  # pragma: no cover
    Extension = object  # type: ignore[assignment,misc]


class DoctestFences(Extension):
    """A griffe extension (mkdocs.yml): a docstring's bare ``>>>`` example is shown as a Python console block.

    Without it Markdown reads ``[str(m) for m in ...]`` and the ``['333.34', ...]`` after it as a link."""

    def on_object(self, *, obj: Any, **kwargs: Any) -> None:
        docstring = getattr(obj, "docstring", None)
        if docstring is None or ">>>" not in docstring.value:
            return
        out: list[str] = []
        inside = False
        for line in docstring.value.splitlines():
            starts = line.lstrip().startswith(">>>")
            if starts and not inside:
                out.extend(("```pycon",))
                inside = True
            elif inside and not line.strip():
                out.append("```")
                inside = False
            out.append(line)
        if inside:
            out.append("```")
        docstring.value = "\n".join(out)
