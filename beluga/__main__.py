"""``python -m beluga ...`` (see beluga/cli.py)."""

import sys

from beluga.cli import main

sys.exit(main())
