# Pass rates, s_T and G per configuration x method (plus the IID baseline).


def outcome_files(wildcards):
    return [
        res(wildcards.task, "outcomes", c, m, p, f + ".parquet")
        for c, m, p, f in run_keys(wildcards.task)
    ]


rule aggregate:
    input:
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
        outcomes=outcome_files,
    output:
        pass_rates=f"{RESULTS}/{{task}}/scores/pass_rates.csv",
        scores=f"{RESULTS}/{{task}}/scores/scores.csv",
        markdown=f"{RESULTS}/{{task}}/scores/scores.md",
    params:
        runs=lambda w: [
            {"configuration": c, "method": m, "partition": p, "fold": f,
             "path": res(w.task, "outcomes", c, m, p, f + ".parquet")}
            for c, m, p, f in run_keys(w.task)
        ],
    log:
        "logs/{task}/aggregate.log",
    script:
        "../workflow_scripts/aggregate.py"
