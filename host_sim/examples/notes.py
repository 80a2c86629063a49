"""MCP: a mod that gives its sessions the tools of a small MCP server.

Three lines of the mod declare the server: the host starts ``_notes_server.py`` (next to
this file) with the Python running the host, when a session first needs tools, and offers
its tools to the model as ``notes.read_note`` and ``notes.write_note``. Reading (declared
``read_only_tools``) runs at once; writing waits until the user confirms it (``host.confirm(action_id)``), and its
result then arrives in the session as a notification. The server stops when the host
closes. The notes live in the folder ``notes`` of the host's working directory.

Needs the extra ``mcp`` where the host runs (``pip install 'modular-chat-sdk[mcp]'``); the mod
itself imports only ``modular_sdk``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from modular_sdk import AiContributions, ModMetadata, define_mod, mcp_server

SERVER = str(Path(__file__).with_name("_notes_server.py"))

notes = mcp_server(
    id="notes",
    command=sys.executable,
    args=[SERVER, "notes"],
    description="Plain-text notes in the folder 'notes': read them, and write them when the user agrees",
    read_only_tools=["read_note"],  # runs at once; every other tool waits for the user
)

mod = define_mod(
    metadata=ModMetadata(display_name="Notes", description="Read and write notes through an MCP server"),
    ai=AiContributions(mcp_servers=[notes]),
)
