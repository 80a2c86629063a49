"""MCP, both ways (docs/mcp.md, extra ``mcp``): the lineage served over MCP
(`lineage_mcp_server`, ``host-sim mcp``), and mods using MCP servers' tools.

Nothing here imports the ``mcp`` package at import time: each module imports it where it
is used, so ``import host_sim`` works without the extra.
"""
