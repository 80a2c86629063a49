"""``/task``: fork this conversation, run work in the fork, report back.

The source is ``host_sim.examples.background_tasks``, shipped in the package; this module gives it its
place in a checkout (``host-sim run examples/background_tasks.py ...``, ``from examples import background_tasks``).
"""

from host_sim.examples.background_tasks import *  # noqa: F403
from host_sim.examples.background_tasks import mod as mod
