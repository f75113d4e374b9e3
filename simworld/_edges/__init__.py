"""The edges: where simworld meets people and other programs.

Owns the command line (``cli``, the typer app; ``launch``, the entry point, which reads a
plain ``simworld run`` without typer; ``run_command``, what ``run`` does either way), the MCP
server (``serve``, with its HTTP transport in ``serve_http`` and the answers to each MCP method
in ``serve_rpc``) and the Session that episodes driven from outside share, trajectory export,
the run report (text, JSON and the HTML page in ``report_page/``), ``show``, and the
integrations: Inspect AI, Gymnasium and verifiers, each imported only when used.

May import: every stage.
"""
