"""MCP servers' tools for mods (docs/mcp.md, extra ``mcp``): starting a server, listing
and calling its tools, trust and process cleanup. The lineage served over MCP is
``host_sim.lineage_mcp`` (it serves a host, so it sits above `sessions`; this sits below).

Nothing here imports the ``mcp`` package at import time: each module imports it where it
is used, so ``import host_sim`` works without the extra.
"""
