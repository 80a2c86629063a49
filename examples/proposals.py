"""Traces: a tool that reports the proposal it made, and an action the user confirms.

The source is ``host_sim.examples.proposals``, shipped in the package; this module gives it its
place in a checkout (``host-sim run examples/proposals.py ...``, ``from examples import proposals``).
"""

from host_sim.examples.proposals import *  # noqa: F403
from host_sim.examples.proposals import mod as mod
