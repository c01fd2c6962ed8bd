# The targets: the default target's files (rule all, Snakefile) and the related
# analyses' (rules inoculation_all and combinational_all, rules/inoculation.smk, rules/combinational.smk).
# Every path comes from PATHS (beluga/workflow/paths.py).

INOC_OUTPUTS = ("table.csv", "outcomes.csv", "inoculation.md", "curves.png", "transfer.png")
COMB_OUTPUTS = ("table.csv", "table.md", "accuracy.png", "epochs.csv", "epochs.png")
OOD_OUTPUTS = (
    "scores.csv",
    "ranking.csv",
    "ood_table.csv",
    "ood_table.md",
    "ood_table.tex",
    "ood.png",
    "models.csv",
    "correlation.csv",
)
TABLE3_OUTPUTS = ("table3.csv", "table3.md", "table3.tex", "summary.csv", "summary.md", "iid_data.html")
OOD_RANKING_OUTPUTS = ("ranking.csv", "ranking.md", "ood_table.csv", "ood_table.md", "correlation.csv")
GLUEX_OUTPUTS = ("gluex_table3.csv", "gluex_table4.csv", "gluex_tables.md")


# Inoculation by fine-tuning and combinational OOD (docs/ANALYSES.md): in the
# default target when enabled; their targets run them on any config.
def inoc_targets():
    return [p for t in RUNS.inoc_units for p in RUNS.inoc_results(t) + [PATHS.inoculation(n, t) for n in INOC_OUTPUTS]]


def comb_targets():
    # every variant's runs and summary, then the comparison of the variants
    variants = list(RUNS.comb_variants)
    runs = [
        PATHS.combinational_run(k, v, sd) for v in variants for sd in RUNS.seeddirs() for k in COMB_VARIANTS[v]["ks"]
    ]
    outputs = [PATHS.combinational_variant(n, v) for v in variants for n in COMB_OUTPUTS]
    figures = [PATHS.combinational(f"figure_{f}.png") for f in RUNS.comb_figures]  # across variants, if asked
    return runs + outputs + [PATHS.combinational(n) for n in ("comparison.csv", "comparison.md")] + figures


def all_targets():
    """Final tables and plots, plus every fold's predictions and outcomes:
    naming the per-fold files as targets makes a deleted (or failed) fold's
    file rerun that fold alone (Snakemake >= 7.7 does not regenerate a missing
    intermediate file whose consumers are up to date). Inputs the fetch target
    provides must be there first."""
    if NOT_FETCHED:
        where = " ".join(f"--configfile {f}" for f in workflow.configfiles) or ""
        raise WorkflowError(
            f"{len(NOT_FETCHED)} input file(s) of this configuration are not in the data folder {DATA_DIR} "
            f"(first: {NOT_FETCHED[0]}): fetch them first on a machine with a network: "
            f"snakemake fetch --cores 4 {where} (docs/PAPER_RUN.md)"
        )
    targets = []
    for task in TASKS:
        targets += RUNS.run_files(task, "predictions") + RUNS.run_files(task, "outcomes")
        targets += [PATHS.diagnostics("diagnostics.md", task)]
        if RUNS.ood_sets[task]:
            targets += [PATHS.ood(name, task) for name in OOD_OUTPUTS]
        if task in RUNS.suiteless:  # its IID model's OOD evaluation only
            continue
        targets += [PATHS.suite("summary.tsv", task)]
        targets += [PATHS.scores(name, task) for name in ("scores.csv", "scores.md", "pass_rates.csv")]
        targets += [PATHS.plots(f"heatmap_{p}.png", task) for p in PARTITIONS]
        targets += [
            PATHS.stats("significance.csv", task),
            PATHS.stats("intervals.csv", task),
            PATHS.failures("failures.html", task),
            PATHS.figures("figure1.png", task),
            PATHS.figures("figure1.pdf", task),
        ]
    if SUITE_TASKS:
        targets += [PATHS.table3(name) for name in TABLE3_OUTPUTS]
    if sum(bool(RUNS.ood_sets[t]) for t in TASKS) > 1:
        targets += [PATHS.ood_ranking(name) for name in OOD_RANKING_OUTPUTS]
        if RUNS.suiteless:  # GLUE-X's configuration: its Tables 3 and 4 in its layout
            why = beluga_gluex.layout_problem(TASKS, RUNS.suiteless)
            if why is None:
                targets += [PATHS.ood_ranking(name) for name in GLUEX_OUTPUTS]
            else:
                print(
                    f"GLUE-X's Tables 3 and 4 are not written: {why} (the rankings in results/ood/ are)",
                    file=sys.stderr,
                )
    if INOCULATION["enabled"]:
        targets += inoc_targets()
    if COMBINATIONAL["enabled"]:
        targets += comb_targets()
    targets.append(PATHS.run_config())
    return targets
