"""Agents: declare a reviewer agent and start a root session configured by it.

The source is ``host_sim.examples.reviewers``, shipped in the package; this module gives it its
place in a checkout (``host-sim run examples/reviewers.py ...``, ``from examples import reviewers``).
"""

from host_sim.examples.reviewers import *  # noqa: F403
from host_sim.examples.reviewers import mod as mod
