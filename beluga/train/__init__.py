"""Training: streams, items and minibatches, losses, the one loop, model selection, the fold."""
