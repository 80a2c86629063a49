"""The integrator's chat backend (``host_sim.examples.integration.app``), at its checkout path."""

from host_sim.examples.integration.app import *  # noqa: F403
from host_sim.examples.integration.app import ChatBackend as ChatBackend
from host_sim.examples.integration.app import create_app as create_app
from host_sim.examples.integration.app import from_environment as from_environment
