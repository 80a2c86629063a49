"""Hooks: host-wide policy with ``before_action``.

The source is ``host_sim.examples.guardrails``, shipped in the package; this module gives it its
place in a checkout (``host-sim run examples/guardrails.py ...``, ``from examples import guardrails``).
"""

from host_sim.examples.guardrails import *  # noqa: F403
from host_sim.examples.guardrails import mod as mod
