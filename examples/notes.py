"""MCP: a mod that gives its sessions the tools of a small MCP server.

The source is ``host_sim.examples.notes``, shipped in the package; this module gives it its
place in a checkout (``host-sim run examples/notes.py ...``, ``from examples import notes``).
"""

from host_sim.examples.notes import *  # noqa: F403
from host_sim.examples.notes import mod as mod
