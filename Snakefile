# BELUGA: cross-functional analysis of generalization in behavioral learning.
# The workflow includes the rule files, in pipeline order, and holds the results folder's lock.

# The embedded default, unless configuration files are given on the command
# line: a --configfile is a whole configuration (configs/*.yaml) and replaces
# config.yaml rather than being merged into it; --config overrides single keys.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/targets.smk"
include: "rules/fetch.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/evaluate.smk"
include: "rules/aggregate.smk"
include: "rules/plots.smk"
include: "rules/statistics.smk"
include: "rules/ood.smk"
include: "rules/inoculation.smk"
include: "rules/combinational.smk"


# A real run (not -n) into a read-only / inaccessible results folder fails before any job;
# a results folder another working directory's run is writing to is refused (beluga/core/io.py).
# A local run's jobs start warm: forked from one process that imported torch and transformers once
# (beluga/workflow/warm.py; BELUGA_WARM_JOBS=0 turns it off). A local run of K jobs per GPU must say how many
# GPU slots the machine has (--resources gpu_slot=K per GPU; beluga/workflow/runs.py check_local_gpu_slots).
onstart:
    try:
        if workflow.local_exec:
            slots = getattr(workflow.global_resources.get("gpu_slot"), "value", None)
            beluga_runs.check_local_gpu_slots(config, slots)
        beluga_io.check_writable(config["results"])
        beluga_io.acquire_results_lock(config["results"], os.getcwd())
    except BelugaError as e:
        raise WorkflowError(str(e)) from None
    print(beluga_precision_line(config["precision"], config["gpus"]), file=sys.stderr)
    if beluga_warm.wanted(workflow.local_exec):
        WARM_SERVER.append(beluga_warm.start(os.getcwd()))


# The run's last lines: the tasks whose recorded i.i.d. data are not the paper's (beluga/report/iid_data.py)
# and how many models are degenerate, with where to read why (beluga/report/degenerate.py).
onsuccess:
    beluga_warm.stop(WARM_SERVER.pop() if WARM_SERVER else None)
    beluga_io.release_results_lock(config["results"], os.getcwd())
    for line in beluga_iid_data.run_end_lines({t: PATHS.iid_source(t) for t in TASKS}):
        print(line, file=sys.stderr)
    for line in beluga_degenerate_lines():
        print(line, file=sys.stderr)


onerror:
    beluga_warm.stop(WARM_SERVER.pop() if WARM_SERVER else None)
    beluga_io.release_results_lock(config["results"], os.getcwd())


# `snakemake --report report.html`: tables, figures, diagnostics, configuration.
report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        lambda w: all_targets(),
