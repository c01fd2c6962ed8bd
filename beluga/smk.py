"""Glue for workflow_scripts: logging to the rule's log file, one-line errors."""

from __future__ import annotations

import logging
import os
import sys
import traceback

from beluga.errors import BelugaError


def run(snakemake, fn) -> None:
    """Call ``fn()`` with logging sent to the rule's log; a BelugaError ends
    the job with its one-line message (full traceback only in the log)."""
    log_path = snakemake.log[0] if len(snakemake.log) else None
    handlers = [logging.StreamHandler(sys.stderr)]
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        handlers=handlers, force=True)
    try:
        fn()
    except BelugaError as e:
        logging.getLogger("beluga").debug(traceback.format_exc())
        if log_path:
            with open(log_path, "a") as fh:
                fh.write(traceback.format_exc())
        print("error: " + " ".join(str(e).splitlines()), file=sys.stderr)  # one line
        sys.exit(1)
