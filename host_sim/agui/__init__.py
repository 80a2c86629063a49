"""AG-UI (docs/protocols.md, extra ``agui``): the host as an agent web front ends run with their
own clients (CopilotKit, ``@ag-ui/client``'s ``HttpAgent``): `agui_app`.

Nothing here imports ``ag_ui`` at import time: `_app` imports `_run` (and with it the
protocol package) at the first request, so ``import host_sim`` works without the extra.
"""
