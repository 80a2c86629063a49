"""Example mods shipped in the wheel, for ``host-sim demo``.

``background_tasks.py`` is a byte-for-byte copy of ``examples/background_tasks.py``, the
readable copy the docs point at; ``tests/cli/test_shipped_example.py`` keeps them equal.
"""
