"""The lineage served over MCP (docs/mcp.md, extra ``mcp``): `lineage_mcp_server` over an
open host, ``host-sim mcp`` over a store. It sits above `sessions` (it serves a `Host`),
while ``host_sim.mcp`` holds the client side that mods' tools use, below `sessions`.

Nothing here imports the ``mcp`` package at import time.
"""
