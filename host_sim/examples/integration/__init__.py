"""A small chat backend on host_sim's integrator surface: see `host_sim.examples.integration.app`."""

from .app import ChatBackend as ChatBackend
from .app import create_app as create_app
from .app import from_environment as from_environment

__all__ = ["ChatBackend", "create_app", "from_environment"]
