"""The example mods, where a checkout keeps them: each module here is ``host_sim.examples``'s.

The examples are shipped in the package as ``host_sim.examples`` (so the docs and
``host-sim demo`` work from a wheel, with no checkout); these modules re-export them under
the paths a checkout has always had: ``host-sim run examples/background_tasks.py``,
``from examples import background_tasks``. There is one source, in ``host_sim/examples/``.
"""
