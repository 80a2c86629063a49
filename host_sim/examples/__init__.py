"""Complete, runnable, type-checked example mods, shipped in the package.

Each module is a mod spec that works wherever the package is installed, no checkout
needed: ``host-sim run host_sim.examples.background_tasks -m "/task write the tests"``,
``from host_sim.examples import background_tasks``. They import ``modular_sdk`` only, as a
mod of your own would (``integration/`` is the exception: an integrator's chat backend,
which needs the ``examples`` extra; so is ``_notes_server``, the MCP server ``notes`` starts,
which needs the ``mcp`` extra). ``background_tasks`` is the ``/task`` mod that
``host-sim demo`` runs.
"""
