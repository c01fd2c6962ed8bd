"""The model: loading and saving, families, class labels, cards, config records, checkpoints, precision, compiling."""
