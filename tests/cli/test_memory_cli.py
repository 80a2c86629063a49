"""``host-sim memory list|search|show``: a store's memory records, read-only, from a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from host_sim import Host, SqliteStore, Window
from modular_sdk import AiPromptMessage

from ._support import clean_env


def memory(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host_sim", "memory", "--store", str(store), *args],
        capture_output=True, text=True, timeout=120, check=False, env=clean_env(),
    )  # fmt: skip


async def _write(path: Path) -> tuple[str, str, str]:
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        t1 = await chat.send(AiPromptMessage(text="I live in Lisbon"))
        t2 = await chat.send(AiPromptMessage(text="and work at Acme"))
        city = await host.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,), data={"city": "Lisbon"})
        await host.memory.record(chat, "Alice, Lisbon and Acme", kind="summary", read_from=Window(first=t1.id, last=t2.id))
        gone = await host.memory.record(chat, "Alice lived in Porto", kind="state", cites=(t1.id,))
        await host.memory.retract(gone.id, reason="she moved")
        return city.id, t1.id, t2.id


def test_memory_lists_searches_and_shows_records_without_writing_the_store(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    city, t1, _ = anyio.run(_write, path)
    before = path.read_bytes()
    listed = memory(path, "list")
    assert listed.returncode == 0, listed.stderr
    assert city in listed.stdout and "Alice lives in Lisbon" in listed.stdout and "Porto" not in listed.stdout
    assert "Porto" in memory(path, "list", "--retracted").stdout
    summaries = json.loads(memory(path, "--json", "list", "--kind", "summary").stdout)
    assert [s["kind"] for s in summaries] == ["summary"]
    found = json.loads(memory(path, "--json", "search", "lisbon alice").stdout)
    assert [r["text"] for r in found] == ["Alice lives in Lisbon", "Alice, Lisbon and Acme"]
    shown = memory(path, "show", city)
    assert shown.returncode == 0 and t1 in shown.stdout and '"city": "Lisbon"' in shown.stdout
    origin = json.loads(memory(path, "--json", "show", city).stdout)["origin"]
    assert [r["turn_id"] for r in origin["read_from"]] == [t1]
    missing = memory(path, "show", "mem_nope")
    assert missing.returncode == 1 and "no memory record by this id in this host: 'mem_nope'" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("action", [["list"], ["search", "x"], ["show", "mem_x"]])
def test_memory_on_a_missing_store_says_so(tmp_path: Path, action: list[str]) -> None:
    done = memory(tmp_path / "none.sqlite", *action)
    assert done.returncode == 1 and "no store at" in done.stderr and not (tmp_path / "none.sqlite").exists()
