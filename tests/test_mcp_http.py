"""`simworld serve --transport http` at its edge: loopback unless told otherwise, a bearer token, a busy port."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import ROOT, TIMEOUT, free_port, http_server, results, wait_for_results

from simworld._edges.serve_http import ServeError, check_access, is_loopback

SCENARIO = "split-balance-three-ways"
TOKEN = "s3cret-token-4c1d9e"  # a marker: it must appear in no file the server writes


def _serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``simworld serve --scenario SCENARIO --out tmp/out ARGS`` run to completion (it is expected to refuse)."""
    import os

    environ = {k: v for k, v in os.environ.items() if k != "SIMWORLD_TOKEN"} | (env or {})
    return subprocess.run([sys.executable, "-m", "simworld", "serve", "--scenario", SCENARIO, "--out",
                           str(tmp_path / "out"), *args], capture_output=True, text=True, cwd=ROOT,
                          stdin=subprocess.DEVNULL, env=environ, timeout=TIMEOUT)


def _refused(done: subprocess.CompletedProcess[str], tmp_path: Path) -> str:
    """The one error line of a refused command that served and wrote nothing."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("simworld: error: "), done.stderr
    assert "simworld serve: serving" not in done.stderr and done.stdout == ""
    assert not (tmp_path / "out").exists()
    return done.stderr


def _status(url: str, headers: dict[str, str] | None = None, method: str = "POST") -> tuple[int, Any]:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}' if method == "POST" else None
    request = urllib.request.Request(url, data=body, method=method, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


class TestLoopbackOnly:
    def test_loopback_addresses(self) -> None:
        """127.0.0.0/8, ::1 and localhost are loopback; the wildcard and other addresses are not."""
        assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "localhost"))
        assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.1.2.3", "192.168.0.7", "no-such-host.invalid"))

    def test_access_rules(self) -> None:
        """Loopback needs nothing; another address needs --allow-remote and a token; a blank token is refused."""
        check_access("127.0.0.1", False, None)
        check_access("0.0.0.0", True, TOKEN)
        with pytest.raises(ServeError, match="--allow-remote"):
            check_access("0.0.0.0", False, TOKEN)
        with pytest.raises(ServeError, match="needs a bearer token"):
            check_access("0.0.0.0", True, None)
        for bad in ("", "two words", "tab\there"):
            with pytest.raises(ServeError, match="--token"):
                check_access("127.0.0.1", False, bad)

    def test_non_loopback_host_without_allow_remote_is_refused(self, tmp_path: Path) -> None:
        """--host 0.0.0.0 alone is one line naming --host, --allow-remote and the token; nothing is served."""
        err = _refused(_serve(tmp_path, "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port()),
                              env={"SIMWORLD_TOKEN": TOKEN}), tmp_path)
        assert "--host '0.0.0.0' is not a loopback address" in err and "--allow-remote" in err
        assert "SIMWORLD_TOKEN" in err and TOKEN not in err

    def test_allow_remote_without_a_token_is_refused(self, tmp_path: Path) -> None:
        """--allow-remote with no token is one line saying how to give one; nothing is served."""
        err = _refused(_serve(tmp_path, "--transport", "http", "--host", "0.0.0.0", "--allow-remote", "--port",
                              str(free_port())), tmp_path)
        assert "needs a bearer token" in err and "SIMWORLD_TOKEN" in err


class TestBearerToken:
    def test_requests_without_the_token_get_401_and_with_it_play(self, tmp_path: Path) -> None:
        """With a token, a request without it, or with another, is 401 on any path; the SDK client sending it
        plays an episode; the token is in no file the server wrote nor in its log."""
        import anyio
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        out = tmp_path / "out"

        async def play(url: str) -> Any:
            with anyio.fail_after(TIMEOUT):
                async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as client,
                            streamable_http_client(url, http_client=client) as (read, write),
                            ClientSession(read, write) as session):
                    await session.initialize()
                    return await session.call_tool("decline", {"reason": "Testing."})

        with http_server(tmp_path / "server.log", "--scenario", SCENARIO, "--out", str(out),
                         env={"SIMWORLD_TOKEN": TOKEN}) as (proc, port):
            base = f"http://127.0.0.1:{port}"
            missing, headers = _status(f"{base}/mcp")
            wrong, _ = _status(f"{base}/mcp", {"Authorization": "Bearer not-the-token"})
            not_bearer, _ = _status(f"{base}/mcp", {"Authorization": TOKEN})
            elsewhere, _ = _status(f"{base}/anything", method="GET")
            declined = anyio.run(play, f"{base}/mcp")
            (line,) = wait_for_results(out, 1, proc)
        assert (missing, wrong, not_bearer, elsewhere) == (401, 401, 401, 401)
        assert headers["www-authenticate"].startswith("Bearer")
        assert not declined.is_error and line["outcome"] == "decline"
        written = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert (tmp_path / "server.log") in written and len(written) >= 3
        assert not [p for p in written if TOKEN.encode() in p.read_bytes()]


class TestBusyPort:
    def test_a_busy_port_is_one_line_and_exit_2_before_serving(self, tmp_path: Path) -> None:
        """A port something already listens on is one error line naming --port, exit 2, nothing served or written."""
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            port = holder.getsockname()[1]
            err = _refused(_serve(tmp_path, "--transport", "http", "--port", str(port)), tmp_path)
        assert f"--port {port} is in use" in err and "another --port" in err
        assert results(tmp_path / "out") == []
