"""Suite specs: CheckList-style tests written as data — templates over lexicons, perturbations of real
sentences, an expectation per functionality — rendered into the project's suite format (docs/SUITE_FORMAT.md,
"Writing a suite: spec files").

A spec is a YAML file (validated by ``packaged_specs/spec.schema.yaml``; one line naming the file, the functionality and
the field for anything wrong). :func:`load_spec` reads and checks it, :func:`load_sources` reads its real
sentences, :func:`render_spec` makes the cases. The project's default suites are specs shipped with the package
(``beluga/suites/packaged_specs/<name>.yaml``: :data:`PACKAGED`), rendered by the same engine. What the checks and the
rendering share is in :mod:`beluga.suites.spec.core`, the reading in :mod:`beluga.suites.spec.reading`, the checks
in :mod:`beluga.suites.spec.check` (template groups and perturbations: :mod:`beluga.suites.spec.groups`), the
sources and the rendering in :mod:`beluga.suites.spec.render`; this package is the entry point the rest of the
code imports (``from beluga.suites import spec``).

How a functionality's cases are made (``n`` cases, functionality ``i`` drawing everything from
``numpy.random.default_rng(seed + i)``):

- ``templates``: groups of templates, the cases spread evenly over the groups, each a fill of the group's
  template × lexicon product drawn in seeded order (:mod:`beluga.suites.templates`). A group's case is
  one input with the group's ``label`` (``answer`` for read) — an MFT —, or an original and its
  perturbations: ``fill_slot`` (the slot empty, then filled), ``swap_slot`` (the slot's value swapped),
  ``variants`` (other templates with the same fill), ``perturb`` (a built-in perturbation of the rendered
  text).
- ``source`` + ``perturb``: real sentences of a source in seeded order, each with its perturbations
  (sentences it does not change are skipped); ``fallback`` template groups, perturbed the same way, fill up
  the count when the sentences run out. para: the pair (sentence, sentence) with ``apply_to`` changing one
  or both, or with ``pairs: perturbed_pairs`` MFT cases (sentence, perturbed sentence) with ``label``.

A functionality that yields no case at all (every fill repeats a value, a perturbation changes nothing) stops
with one line; one that yields fewer than ``n`` repeats its cases (only when the whole product is smaller).
"""

from beluga.suites.spec.check import load_spec, spec_from_data
from beluga.suites.spec.core import PACKAGED, RENDER_DEFAULTS, SPEC_SCHEMA, SPECS_DIR, Spec, expectation, spec_path
from beluga.suites.spec.render import (
    agg_of,
    catalogue,
    dataset_versions,
    declared,
    load_sources,
    read_sentence_table,
    read_text_source,
    render_spec,
    spec_expectation,
    spec_files,
    uses_pool,
)

__all__ = ["PACKAGED", "RENDER_DEFAULTS", "SPECS_DIR", "SPEC_SCHEMA", "Spec", "agg_of", "catalogue", "dataset_versions",
           "declared", "expectation", "load_sources", "load_spec", "read_sentence_table", "read_text_source",
           "render_spec", "spec_expectation", "spec_files", "spec_from_data", "spec_path", "uses_pool"]
