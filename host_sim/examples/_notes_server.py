"""A small MCP server over stdio, used by the example mod ``examples/notes.py``.

It keeps plain-text notes in a folder (the first argument; ``notes`` in the current folder
by default) and offers two tools: ``read_note`` is annotated read-only, so a host runs it
as soon as the model calls it; ``write_note`` is not, so a host asks the user first.

This file is a program the host starts (``python _notes_server.py FOLDER``), not a mod:
it imports the ``mcp`` package (the extra ``mcp``), which a mod never does. Run it alone to
try it with any MCP client.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def _path(folder: Path, name: str) -> Path:
    if not _NAME.fullmatch(name):
        raise ToolError(f"note name {name!r} is not allowed: use lowercase letters, digits, '_' and '-'")
    return folder / f"{name}.txt"


def build(folder: Path) -> MCPServer:
    """The notes server over ``folder``."""
    server = MCPServer(name="notes", instructions="Plain-text notes in one folder.")

    @server.tool(description="Read the note with this name", annotations=ToolAnnotations(read_only_hint=True))
    def read_note(name: str) -> str:
        path = _path(folder, name)
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in folder.glob("*.txt"))) or "none"
            raise ToolError(f"there is no note {name!r} (notes: {known})")
        return path.read_text(encoding="utf-8")

    @server.tool(
        description="Write (create or replace) the note with this name",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    def write_note(name: str, text: str) -> str:
        path = _path(folder, name)
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return f"wrote note {name!r} ({len(text)} characters)"

    return server


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "notes")).run()
