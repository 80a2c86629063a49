"""Tools: an AI tool the *model* decides to call, with a typed, schema-checked input.

The source is ``host_sim.examples.code_search``, shipped in the package; this module gives it its
place in a checkout (``host-sim run examples/code_search.py ...``, ``from examples import code_search``).
"""

from host_sim.examples.code_search import *  # noqa: F403
from host_sim.examples.code_search import mod as mod
