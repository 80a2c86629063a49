"""Ctrl-C while the ``host-sim`` command is still starting ends as Ctrl-C later does.

The command's entry point imports this package before ``main`` runs (a few tenths of a
second of imports); a ``KeyboardInterrupt`` there would print a traceback. When this process
is the ``host-sim`` command (its script's name), a SIGINT handler that prints the one line
and ends the process with status 130 is installed before anything else is imported (this
module imports only ``signal`` itself: a Ctrl-C landing in a slower import, ``threading``,
printed a traceback through this package), and
`host_sim._cli.main` puts Python's own handler back first thing (from then on Ctrl-C cancels
the command's work and ``main`` reports it). A program that imports host_sim is left alone.
"""

from __future__ import annotations

import os  # (loaded at interpreter start already)
import signal
import sys

__all__ = ["interrupted_while_starting", "quiet_start"]


def interrupted_while_starting(signum: int, frame: object) -> None:
    """SIGINT before ``main`` runs: one line, status 130, nothing else to clean up yet."""
    try:
        os.write(2, b"\nhost-sim: interrupted\n")
    finally:
        os._exit(130)


def quiet_start() -> None:
    """Install `interrupted_while_starting` when this process is the ``host-sim`` command."""
    command = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if command == "host-sim":
        try:
            signal.signal(signal.SIGINT, interrupted_while_starting)
        except ValueError:  # not the main thread (an embedding that runs the script so): left alone
            pass
