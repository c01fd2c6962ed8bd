"""``python -m beluga ...`` (see beluga/cli/__init__.py)."""

import sys

from beluga.cli import main

sys.exit(main())
