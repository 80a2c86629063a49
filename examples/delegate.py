"""``/delegate``: spawn a fresh child session for a sub-job and report its answer.

The source is ``host_sim.examples.delegate``, shipped in the package; this module gives it its
place in a checkout (``host-sim run examples/delegate.py ...``, ``from examples import delegate``).
"""

from host_sim.examples.delegate import *  # noqa: F403
from host_sim.examples.delegate import mod as mod
