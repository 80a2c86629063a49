"""``python -m host_sim``: the same as the ``host-sim`` command."""

from __future__ import annotations

import sys

from host_sim._cli import main

sys.exit(main())
