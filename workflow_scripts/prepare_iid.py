from beluga import pipeline
from beluga.smk import run

run(snakemake, lambda: pipeline.prepare_iid(  # noqa: F821
    snakemake.params.iid, snakemake.params.task_type,  # noqa: F821
    {k: snakemake.output[k] for k in ("train", "val", "test", "pool")}))  # noqa: F821
