"""ACP, the Agent Client Protocol (docs/protocols.md, extra ``acp``): an editor (Zed and
others) drives the host over stdio with ``host-sim acp``.

``_agent`` imports the ``acp`` package at import time; only ``host-sim acp`` imports it,
when the command runs, so ``import host_sim`` and ``host-sim --help`` work without the extra.
This folder sits above ``sessions`` (it drives a `Host`), and nothing of host_sim but the
CLI imports it.
"""
