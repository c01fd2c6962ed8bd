"""Every results path is spelled once (beluga/workflow/paths.py): a rule's
pattern and a concrete path come from the same function."""

from beluga.workflow.paths import IID_RUN, Paths, RunKey, fold_dir, fold_log

P = Paths("results")


def test_patterns_are_the_rules_wildcard_patterns():
    """The defaults are Snakemake wildcards: the rules' outputs, character for character."""
    assert P.run("predictions") == "results/{task}/predictions/{conf}/{method}/{partition}/{fold}.parquet"
    assert P.run("predictions", ext="json") == "results/{task}/predictions/{conf}/{method}/{partition}/{fold}.json"
    assert P.run("outcomes") == "results/{task}/outcomes/{conf}/{method}/{partition}/{fold}.parquet"
    assert P.model() == "results/{task}/models/{conf}/{method}/{partition}/{fold}"
    assert P.iid_model() == "results/{task}/models/iid/vanilla/standard/all"
    assert P.iid_run("outcomes") == "results/{task}/outcomes/iid/vanilla/standard/all.parquet"
    assert P.trial() == "results/{task}/selection/{conf}/{method}/{partition}/{fold}/trials/{trial}.json"
    assert P.selected() == "results/{task}/selection/{conf}/{method}/{partition}/{fold}/selected.json"
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
    assert P.diagnostics("summary.csv") == "results/{task}/diagnostics/summary.csv"
    assert P.failures("failures.html") == "results/{task}/failures/failures.html"
    assert P.inoculation("curves.png") == "results/{task}/inoculation/curves.png"
    assert P.inoculation_run() == "results/{task}/inoculation/runs/{unit}/{dose}/{lr}.json"
    assert P.combinational_run() == "results/combinational/{variant}/runs/k{k}.json"
    assert P.combinational("pool.parquet") == "results/combinational/pool.parquet"
    assert P.combinational_variant("table.csv") == "results/combinational/{variant}/table.csv"
    assert P.table3("table3.tex") == "results/table3/table3.tex"
    assert P.ood_ranking("ranking.md") == "results/ood/ranking.md"
    assert P.run_config() == "results/run_config.yaml"


def test_concrete_paths():
    key = RunKey("iid_to_t", "lp", "func", "typos")
    assert P.run("outcomes", "sent", *key) == "results/sent/outcomes/iid_to_t/lp/func/typos.parquet"
    assert P.run("predictions", "sent", *IID_RUN) == "results/sent/predictions/iid/vanilla/standard/all.parquet"
    assert P.iid_run("predictions", "para", ext="json") == "results/para/predictions/iid/vanilla/standard/all.json"
    assert P.model("sent", *key) == "results/sent/models/iid_to_t/lp/func/typos"
    assert P.iid_model("read") == "results/read/models/iid/vanilla/standard/all"
    assert P.selected("sent", "iid_to_t", "vanilla", "seen", "all") == \
        "results/sent/selection/iid_to_t/vanilla/seen/all/selected.json"
    assert P.trial("sent", *key, "lr0.001") == "results/sent/selection/iid_to_t/lp/func/typos/trials/lr0.001.json"
    assert P.checkpoints("trial", "sent", key, "lr0.001") == \
        "results/sent/checkpoints/trial/iid_to_t/lp/func/typos/lr0.001"
    assert P.checkpoints("train_iid", "sent", IID_RUN) == "results/sent/checkpoints/train_iid/iid/vanilla/standard/all"
    assert P.inoculation_run("sent", "suite", "all", "lr0.001") == \
        "results/sent/inoculation/runs/suite/all/lr0.001.json"
    assert P.combinational_run(8, "minilm") == "results/combinational/minilm/runs/k8.json"
    assert P.combinational_variant("epochs.png", "minilm") == "results/combinational/minilm/epochs.png"
    assert P.ood_data("tweets", "sent") == "results/sent/ood/data/tweets.parquet"
    assert P.task_path("sent", "iid", "test.parquet") == "results/sent/iid/test.parquet"


def test_a_pattern_filled_in_is_the_concrete_path():
    values = {"task": "sent", "conf": "iid_plus_t", "method": "irm", "partition": "class", "fold": "negation",
              "trial": "lr1e-05", "unit": "class-negation", "dose": "4", "lr": "lr0.001", "k": "16",
              "variant": "minilm"}
    key = RunKey(values["conf"], values["method"], values["partition"], values["fold"])
    for kind in ("predictions", "outcomes"):
        assert P.run(kind).format(**values) == P.run(kind, "sent", *key)
    assert P.model().format(**values) == P.model("sent", *key)
    assert P.trial().format(**values) == P.trial("sent", *key, "lr1e-05")
    assert P.selected().format(**values) == P.selected("sent", *key)
    assert P.inoculation_run().format(**values) == P.inoculation_run("sent", "class-negation", "4", "lr0.001")
    assert P.combinational_run().format(**values) == P.combinational_run(16, "minilm")


def test_results_root_and_logs():
    deep = Paths("/scratch/me/results")
    assert deep.run("outcomes", "sent", *IID_RUN) == \
        "/scratch/me/results/sent/outcomes/iid/vanilla/standard/all.parquet"
    assert deep.table3("table3.csv") == "/scratch/me/results/table3/table3.csv"
    assert fold_dir() == "{conf}/{method}/{partition}/{fold}"
    assert fold_dir(*IID_RUN) == "iid/vanilla/standard/all"
    assert fold_log("finetune") == "logs/{task}/finetune/{conf}/{method}/{partition}/{fold}.log"
    assert fold_log("trial", "{trial}") == "logs/{task}/trial/{conf}/{method}/{partition}/{fold}/{trial}.log"
