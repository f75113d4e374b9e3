"""Runs one episode of ``waive-small-fee`` at seed 0 through Inspect or verifiers against a model endpoint.

Used by tests/test_chat_model.py in a process of its own: Inspect and verifiers leave threads behind, and a test
process that later forks (``export --workers``) must not carry them.

    python tests/chat_clients.py inspect|verifiers BASE_URL OUT
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(client: str, base_url: str, out: str) -> int:
    if client == "inspect":
        from inspect_ai import eval as inspect_eval
        from inspect_ai.model import get_model

        from simworld._edges.inspect import suite

        (log,) = inspect_eval(suite(scenario="waive-small-fee", seeds=0, out=out),
                              model=get_model("openai-api/stub/scripted", base_url=base_url, api_key="x"),
                              log_dir=str(Path(out).parent / "logs"), display="none")
        return 0 if log.status in ("success", "error") else 1
    from openai import AsyncOpenAI

    from simworld._edges.verifiers import load_environment

    env = load_environment(scenario="waive-small-fee", seeds=0, reward="passed", out=out)
    env.evaluate_sync(client=AsyncOpenAI(base_url=base_url, api_key="x", max_retries=2),  # type: ignore[arg-type]
                      model="scripted")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
