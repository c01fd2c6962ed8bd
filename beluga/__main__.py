"""``python -m beluga ...`` (see beluga/workflow/cli.py)."""

import sys

from beluga.workflow.cli import main

sys.exit(main())
