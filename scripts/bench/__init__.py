"""The modules of ``scripts/benchmark.py`` (the command: its arguments and the order of the figures), one per
benchmark:

- ``common``: the settings every figure reads (device, model, length, batch), the table of figures, the
  models, peak FLOP/s and memory, the run a timed epoch starts from;
- ``workloads``: the default fold and the training variants' workloads;
- ``training``, ``prediction``, ``methods``: the loop against a raw PyTorch loop, prediction against a raw
  ``inference_mode`` loop, each method's cost per epoch;
- ``fold_job``, ``run_share``, ``dry_run``: a fold job as a process, a finished run's fixed share,
  ``snakemake -n`` on the paper's config;
- ``plan_check``: the calibrated plan of the tiny config against its run (planned / measured wall-clock);
- ``loop``: the training loop timed (shared by the GPU-loop figures); ``profiling``, ``variants``, ``jobs``
  (K worker processes per GPU), ``fixed_cost`` (a job's launch -> first step);
- ``summary``: the machine and the throughput table the plan reads;
- ``bundle``: the GPU benchmark's bundle (``--make-bundle`` / ``--bundle``: a bare GPU machine runs the GPU-loop
  figures from it).

``scripts/`` is on ``sys.path`` when the command runs (``python scripts/benchmark.py``), so these import as
``bench.<module>``.
"""
