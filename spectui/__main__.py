"""``python -m spectui`` and the ``spectui`` program: the command line is spectui.cli."""

from __future__ import annotations

import sys

from spectui.cli import main

if __name__ == "__main__":
    sys.exit(main())
