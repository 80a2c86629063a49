"""What this project's own tests reach below the ``host-sim`` command: its parts, driven
in-process (a scripted terminal, a parser of one subcommand) where a subprocess per
example would be too slow or could not see what the test checks.

Not part of the contract, like `host_sim.testing` (the rest of the host's seams for its
tests); the whole command, in-process, is ``host_sim._cli.main``, the entry point
pyproject.toml declares for ``host-sim``.
"""

from __future__ import annotations

from ._chat import WAKE_EVERY, run_chat
from ._chat import _result as main_thread_result
from ._chat import _ScriptLines as ScriptLines
from ._check import register as register_check
from ._lineage import register as register_lineage
from ._lineage import turn_counts
from ._manifest import register as register_manifest
from ._model_option import model_spec
from ._options import check_writable

__all__ = [
    "WAKE_EVERY",
    "ScriptLines",
    "check_writable",
    "main_thread_result",
    "model_spec",
    "register_check",
    "register_lineage",
    "register_manifest",
    "run_chat",
    "turn_counts",
]
