"""Inoculation by fine-tuning (Liu, Schwartz & Smith, NAACL 2019; docs/ANALYSES.md): expose
the IID model to increasing amounts ("doses") of a unit's challenge data and watch the challenge score
and the original score.

- A *unit* is the whole suite, a functionality class or a functionality; its challenge training data
  is its T_train cases, its challenge test set its T_test cases (score: the mean pass rate over its
  functionalities, as s_T), the original test set D_test and the original dev set D_val. An external
  challenge set (a task's OOD set) is a unit too, split by id into a training and a test part and
  scored with the task's i.i.d. metric.
- Doses are numbers of T_train cases (``all``: every one); the samples are nested and dose 0 is the
  IID model itself.
- Each (unit, dose, learning rate) is one job: training starts from the IID model, runs at most
  ``max_epochs`` and stops when the original dev score has not improved for ``patience`` epochs,
  keeping the best-dev weights (the seed's early stopping); the learning rate is constant and halved
  after every epoch whose dev score does not improve (``schedule: halve_on_plateau``, the seed's
  appendix A) or decays linearly (``linear``). Per dose the challenge score is the challenge-best
  learning rate's and the original score the one of the rate with the best original dev score (the
  seed's reading; ``original_from: challenge_best``: the same run's).
- The outcome of a unit compares the last dose with dose 0 by effect-size margins and tests at a stated
  level (1: the gap left's interval within ``gap_margin``; 3: an original drop beyond ``drop_margin``,
  significant), with intervals of every score and of the gap and a label-skew flag; the training seeds
  are pooled, stratified by seed.

Modules: :mod:`.plan` (what the DAG needs: units, learning rates, doses and their samples, challenge
splits, config checks; light), :mod:`.train` (one dose's training job), :mod:`.summary` (the tables over N ≥ 1
training seeds), :mod:`.outcomes` (the tests against dose 0 and the decision) and :mod:`.report`
(inoculation.md, the curves and transfer figures). The generic paired tests are in
:mod:`beluga.report.paired`.
"""
