"""The project's default movie-review sentiment suite: the packaged spec ``specs/sent_default.yaml`` rendered by
the spec engine (beluga/suites/spec.py).

Twenty functionalities in seven capability classes (:func:`sent_catalogue`). MFT cases are filled from
templates and lexicons; INV/DIR cases perturb real sentences passed in by the caller (the spec's source
``reviews``) and fall back to template sentences when too few real sentences qualify, so every functionality has
exactly ``cases_per_functionality`` cases.

Determinism: functionality ``i`` draws all its randomness from its own ``numpy.random.default_rng(seed + i)``;
the same (sentences, seed, n, max_perturbations) always gives the identical DataFrame.
"""

from __future__ import annotations

import pandas as pd

from beluga.errors import ConfigError
from beluga.suites import spec as suite_spec

SENT_LABELS = {0: "negative", 1: "neutral", 2: "positive"}
#: the packaged spec of the default suite
SPEC = "sent_default"
MAX_WORDS = 40


def sent_catalogue() -> list[dict]:
    """One dict per functionality, in suite order, keys: functionality, capability, test_type, expect,
    expect_params (dict), agg_fn, description."""
    return suite_spec.catalogue(suite_spec.load_spec(SPEC))


def generate_sent_suite(sentences: list[str], seed: int, cases_per_functionality: int,
                        max_perturbations: int = 3, max_words: int = MAX_WORDS) -> pd.DataFrame:
    """Suite DataFrame in the format of beluga/suites/format.py (columns format.COLUMNS).
    Real sentences longer than ``max_words`` words are not used."""
    n, max_p = int(cases_per_functionality), int(max_perturbations)
    if n < 1:
        raise ConfigError(f"suite generator: cases_per_functionality must be >= 1, got {cases_per_functionality}")
    if max_p < 1:
        raise ConfigError(f"suite generator: max_perturbations must be >= 1, got {max_perturbations}")
    if int(seed) < 0:
        raise ConfigError(f"suite generator: seed must be >= 0, got {seed}")
    spec = suite_spec.load_spec(SPEC)
    return suite_spec.render_spec(spec, {"reviews": list(sentences or [])}, seed=int(seed),
                                  cases_per_functionality=n, max_perturbations=max_p, max_words=int(max_words))
