"""Every results path is spelled once (beluga/workflow/paths.py): a rule's
pattern and a concrete path come from the same function."""

from beluga.workflow.paths import IID_RUN, Paths, RunKey, fold_dir, fold_log, seed_of, seeddir_of

P = Paths("results")


def test_patterns_are_the_rules_wildcard_patterns():
    """The defaults are Snakemake wildcards: the rules' outputs, character for character."""
    assert P.run("predictions") == "results/{task}/{seeddir}predictions/{conf}/{method}/{partition}/{fold}.parquet"
    assert P.run("predictions", ext="json") == \
        "results/{task}/{seeddir}predictions/{conf}/{method}/{partition}/{fold}.json"
    assert P.run("outcomes") == "results/{task}/{seeddir}outcomes/{conf}/{method}/{partition}/{fold}.parquet"
    assert P.model() == "results/{task}/{seeddir}models/{conf}/{method}/{partition}/{fold}"
    assert P.iid_model() == "results/{task}/{seeddir}models/iid/vanilla/standard/all"
    assert P.iid_run("outcomes") == "results/{task}/{seeddir}outcomes/iid/vanilla/standard/all.parquet"
    assert P.trial() == "results/{task}/{seeddir}selection/{conf}/{method}/{partition}/{fold}/trials/{trial}.json"
    assert P.selected() == "results/{task}/{seeddir}selection/{conf}/{method}/{partition}/{fold}/selected.json"
    assert [P.iid(s) for s in ("train", "pool")] == ["results/{task}/iid/train.parquet",
                                                      "results/{task}/iid/pool.parquet"]
    assert P.iid_source() == "results/{task}/iid/source.json"
    assert P.suite() == "results/{task}/suite/suite.parquet"
    assert P.suite("summary.tsv") == "results/{task}/suite/summary.tsv"
    assert P.ood_data() == "results/{task}/ood/data/{name}.parquet"
    assert P.ood("ood_table.md") == "results/{task}/ood/ood_table.md"
    assert P.scores("pass_rates.csv") == "results/{task}/scores/pass_rates.csv"
    assert P.plots("heatmap_{scenario}.png") == "results/{task}/plots/heatmap_{scenario}.png"
    assert P.figures("figure1.pdf") == "results/{task}/figures/figure1.pdf"
    assert P.stats("null_avg.parquet") == "results/{task}/stats/null_avg.parquet"
    assert P.unit_outcomes() == "results/{task}/{seeddir}stats/unit_outcomes.parquet"
    assert P.diagnostics("summary.csv") == "results/{task}/diagnostics/summary.csv"
    assert P.failures("failures.html") == "results/{task}/failures/failures.html"
    assert P.inoculation("curves.png") == "results/{task}/inoculation/curves.png"
    assert P.inoculation_run() == "results/{task}/{seeddir}inoculation/runs/{unit}/{dose}/{lr}.json"
    assert P.combinational_run() == "results/combinational/{variant}/{seeddir}runs/k{k}.json"
    assert P.combinational("pool.parquet") == "results/combinational/pool.parquet"
    assert P.combinational_variant("table.csv") == "results/combinational/{variant}/table.csv"
    assert P.table3("table3.tex") == "results/table3/table3.tex"
    assert P.ood_ranking("ranking.md") == "results/ood/ranking.md"
    assert P.run_config() == "results/run_config.yaml"


def test_concrete_paths():
    key = RunKey("iid_to_t", "lp", "func", "typos")
    assert P.run("outcomes", "sent", *key, seeddir="") == "results/sent/outcomes/iid_to_t/lp/func/typos.parquet"
    assert P.run("predictions", "sent", *IID_RUN, seeddir="") == \
        "results/sent/predictions/iid/vanilla/standard/all.parquet"
    assert P.iid_run("predictions", "para", ext="json", seeddir="") == \
        "results/para/predictions/iid/vanilla/standard/all.json"
    assert P.model("sent", *key, seeddir="") == "results/sent/models/iid_to_t/lp/func/typos"
    assert P.iid_model("read", seeddir="") == "results/read/models/iid/vanilla/standard/all"
    assert P.selected("sent", "iid_to_t", "vanilla", "seen", "all", seeddir="") == \
        "results/sent/selection/iid_to_t/vanilla/seen/all/selected.json"
    assert P.trial("sent", *key, "lr0.001", seeddir="") == \
        "results/sent/selection/iid_to_t/lp/func/typos/trials/lr0.001.json"
    assert P.checkpoints("trial", "sent", key, "lr0.001") == \
        "results/sent/checkpoints/trial/iid_to_t/lp/func/typos/lr0.001"
    assert P.checkpoints("train_iid", "sent", IID_RUN) == "results/sent/checkpoints/train_iid/iid/vanilla/standard/all"
    assert P.inoculation_run("sent", "suite", "all", "lr0.001", seeddir="") == \
        "results/sent/inoculation/runs/suite/all/lr0.001.json"
    assert P.combinational_run(8, "minilm", "") == "results/combinational/minilm/runs/k8.json"
    assert P.combinational_variant("epochs.png", "minilm") == "results/combinational/minilm/epochs.png"
    assert P.ood_data("tweets", "sent") == "results/sent/ood/data/tweets.parquet"
    assert P.task_path("sent", "iid", "test.parquet") == "results/sent/iid/test.parquet"
    # another training seed: the same layout under seeds/<s>/ (the base seed keeps the one-seed paths)
    sd = seeddir_of(7, base=1)
    assert sd == "seeds/7/" and seeddir_of(1, base=1) == "" and seed_of(sd, 1) == 7 and seed_of("", 1) == 1
    assert P.run("outcomes", "sent", *key, seeddir=sd) == "results/sent/seeds/7/outcomes/iid_to_t/lp/func/typos.parquet"
    assert P.iid_model("sent", seeddir=sd) == "results/sent/seeds/7/models/iid/vanilla/standard/all"
    assert P.selected("sent", *key, seeddir=sd) == "results/sent/seeds/7/selection/iid_to_t/lp/func/typos/selected.json"
    assert P.checkpoints("trial", "sent", key, "lr0.001", seeddir=sd) == \
        "results/sent/seeds/7/checkpoints/trial/iid_to_t/lp/func/typos/lr0.001"
    assert P.inoculation_run("sent", "suite", "all", "lr0.001", seeddir=sd) == \
        "results/sent/seeds/7/inoculation/runs/suite/all/lr0.001.json"
    assert P.unit_outcomes("sent", sd) == "results/sent/seeds/7/stats/unit_outcomes.parquet"
    assert P.combinational_run(8, "minilm", sd) == "results/combinational/minilm/seeds/7/runs/k8.json"


def test_a_pattern_filled_in_is_the_concrete_path():
    values = {"task": "sent", "conf": "iid_plus_t", "method": "irm", "partition": "class", "fold": "negation",
              "trial": "lr1e-05", "unit": "class-negation", "dose": "4", "lr": "lr0.001", "k": "16",
              "variant": "minilm", "seeddir": ""}
    key = RunKey(values["conf"], values["method"], values["partition"], values["fold"])
    for kind in ("predictions", "outcomes"):
        assert P.run(kind).format(**values) == P.run(kind, "sent", *key, seeddir="")
    assert P.model().format(**values) == P.model("sent", *key, seeddir="")
    assert P.trial().format(**values) == P.trial("sent", *key, "lr1e-05", seeddir="")
    assert P.selected().format(**values) == P.selected("sent", *key, seeddir="")
    assert P.inoculation_run().format(**values) == \
        P.inoculation_run("sent", "class-negation", "4", "lr0.001", seeddir="")
    assert P.combinational_run().format(**values) == P.combinational_run(16, "minilm", "")
    values["seeddir"] = "seeds/2/"
    assert P.run("outcomes").format(**values) == P.run("outcomes", "sent", *key, seeddir="seeds/2/")


def test_results_root_and_logs():
    deep = Paths("/scratch/me/results")
    assert deep.run("outcomes", "sent", *IID_RUN, seeddir="") == \
        "/scratch/me/results/sent/outcomes/iid/vanilla/standard/all.parquet"
    assert deep.table3("table3.csv") == "/scratch/me/results/table3/table3.csv"
    assert fold_dir() == "{conf}/{method}/{partition}/{fold}"
    assert fold_dir(*IID_RUN) == "iid/vanilla/standard/all"
    assert fold_log("finetune") == "logs/{task}/{seeddir}finetune/{conf}/{method}/{partition}/{fold}.log"
    assert fold_log("trial", "{trial}") == "logs/{task}/{seeddir}trial/{conf}/{method}/{partition}/{fold}/{trial}.log"
