"""What every part of the package uses: errors, bounds, I/O, settings, seeds, provenance, clocks, task types."""
