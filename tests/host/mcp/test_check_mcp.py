"""``host-sim check`` starts the MCP servers a mod declares (API §25): a server that cannot
start is a problem naming it, its exit status and its last standard error lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SERVERS = str(Path(__file__).resolve().parents[2] / "cli" / "fixtures" / "servers.py")


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host_sim", "check", *args], capture_output=True, text=True, timeout=300, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )  # fmt: skip


def test_check_lists_a_started_servers_tools_and_fails_naming_the_one_that_cannot_start() -> None:
    done = check(SERVERS, "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    (report,) = json.loads(done.stdout)["mods"]
    assert report["mcp_servers"] == [{"id": "notes", "tools": ["notes.read_note", "notes.write_note"]}]
    (problem,) = report["problems"]
    assert problem.startswith("MCP server 'broken' of mod 'servers' failed: ")
    assert problem.endswith("(exit status 3; its standard error ended: starting | NOTES_TOKEN is not set)")
    text = check(SERVERS)
    assert "FAILED  " in text.stdout and "NOTES_TOKEN is not set" in text.stdout
    assert "Traceback" not in text.stdout + text.stderr


def test_check_no_mcp_starts_no_server() -> None:
    done = check(SERVERS, "--no-mcp")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok      ") and "started" not in done.stdout
