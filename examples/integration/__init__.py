"""The integrator's chat backend (``host_sim.examples.integration``), at its checkout path."""

from host_sim.examples.integration import ChatBackend as ChatBackend
from host_sim.examples.integration import create_app as create_app
from host_sim.examples.integration import from_environment as from_environment

__all__ = ["ChatBackend", "create_app", "from_environment"]
