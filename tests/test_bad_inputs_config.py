"""The bad-input catalogue, configuration part (issue 25, round 3): the settings of
the related analyses, their job ids and the cost plan. As tests/test_bad_inputs.py,
every case ends with one line naming the config file (or the file) and the field,
a non-zero exit, and no results; a setting that the config alone shows to be wrong
is refused while the DAG is built (``snakemake -n``, ``python -m beluga plan``).

- Combinational OOD: two label words alike (case, accents, spaces: the cells
  fst/fst and fst/sec would be the same inputs with opposite labels), for the block
  and for every variant, and words the model's tokenizer makes identical (job time,
  before training); roles missing, two roles on one label, a label the Hutto &
  Gilbert bins do not have; overlapping or empty rating bins; a template without
  ``{S}`` / ``{LABEL}``; a local data set without its path or roles; a K twice.
- Inoculation: ``tasks: []`` (refused: null is every task), an unknown task, two
  learning rates with one job id (``lr<6 significant digits>``) or the same rate
  twice, two challenge sets with one unit id.
- A config file that turns on Snakemake's YTE templating (``__use_yte__: true``: its ``?`` expressions are
  Python, which snakemake runs when it loads the file) is refused by the dry run and the plan, naming the file
  and the field, unless ``BELUGA_ALLOW_YTE=1``; snakemake has run the expressions by then (and removed the
  field: the file's own text is read).
- The cost plan counts every training / prediction job of the dry run, inoculation
  and combinational ones included; a config file that is a YAML list or not YAML, a
  throughput table that is not JSON (or not the benchmark's shape) are one line.
"""

import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ENV, REPO, SNAKEMAKE, config_with, load_error, output, planned_jobs, smk_config

from beluga.analyses import combinational as comb
from beluga.analyses.inoculation import plan as ino
from beluga.cli import main as cli_main
from beluga.core.errors import ConfigError
from beluga.workflow.cost import REFERENCE
from beluga.workflow.paths import Paths
from beluga.workflow.plan import load_config, plan
from beluga.workflow.runs import Runs

#: the rules whose jobs the cost plan counts
TRAINING_RULES = {"train_iid", "predict", "finetune", "finetune_keep", "finetune_model", "trial", "inoculate",
                  "combinational_train"}
WORDS = {"fst": "great", "sec": "terrible", "neu": "okay"}
TEMPLATE = "{S} It is {LABEL}."


def one_line(text: str, *needles: str) -> str:
    """The single line of ``text`` holding every needle (the message never spans lines)."""
    lines = [ln for ln in text.splitlines() if all(n in ln for n in needles)]
    assert len(lines) == 1, f"expected one line with {needles}, got {lines}:\n{text[-3000:]}"
    print(lines[0])  # the catalogue's messages: pytest -rP shows them
    return lines[0]


def check_workflow_error(out, *needles: str) -> str:
    """A snakemake run that stops with a WorkflowError: non-zero exit, the message on the
    line after the WorkflowError header, no dump, no traceback."""
    text = output(out)
    assert out.returncode != 0, text[-2000:]
    line = one_line(text, *needles)
    lines = text.splitlines()
    i = lines.index(line)
    assert i > 0 and lines[i - 1].startswith("WorkflowError"), text[-2000:]
    for noise in ("Failed validating", "On instance", "Traceback", "KeyError"):
        assert noise not in text, text[-3000:]
    return line


def check_exc(excinfo, *needles: str) -> str:
    msg = str(excinfo.value)
    print(msg)
    assert "\n" not in msg, msg
    assert all(n in msg for n in needles), (needles, msg)
    return msg


def plan_cli(capsys, *args) -> tuple[int, str, str]:
    """``python -m beluga plan ...`` in this process: (exit status, stdout, stderr)."""
    rc = cli_main(["plan", *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def check_plan_error(capsys, *args_and_needles) -> str:
    """The plan stops with one ``error: `` line holding every needle, exit status 2."""
    args, needles = args_and_needles
    rc, out, err = plan_cli(capsys, *args)
    assert rc == 2, (rc, out[-2000:], err[-2000:])
    errors = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    print(errors[0])
    assert all(n in errors[0] for n in needles), (needles, errors[0])
    return errors[0]


# ---------------------------------------------------------------- config refused in a dry run
def _comb(**changes):
    return {"combinational__enabled": True, **{f"combinational__{k}": v for k, v in changes.items()}}


def _inoc(**changes):
    return {"inoculation__enabled": True, "inoculation__doses": [2], "inoculation__lrs": [1.0e-3],
            **{f"inoculation__{k}": v for k, v in changes.items()}}


DRY_RUN_CASES = {
    # name: (changes to conftest's BASE, field named in the message, words of the message)
    "label_words_alike": (_comb(label_words={"fst": "great", "sec": "Great ", "neu": "okay"}),
                          "combinational.label_words", "same word up to case"),
    "label_words_alike_accents": (_comb(label_words={"fst": "café", "sec": "bad", "neu": "CAFE"}),
                                  "combinational.label_words", "fst/neu (label 1) would be the same inputs"),
    "variant_label_words_alike": (_comb(variants=[{"name": "a"}, {"name": "b", "label_words": {"neu": "GREAT"}}]),
                                  "combinational.variants[1].label_words", "opposite labels"),
    "label_word_blank": (_comb(label_words={"fst": "great", "sec": "terrible", "neu": "  "}),
                         "combinational.label_words.neu", "is blank"),
    "roles_missing_one": (_comb(roles={"fst": "positive", "sec": "negative"}), "combinational.roles.neu",
                          "required key is missing"),
    "roles_one_label_twice": (_comb(roles={"fst": "positive", "sec": "positive", "neu": "neutral"}),
                              "combinational.roles.sec", "label 'positive' is also role fst's"),
    "roles_not_a_hutto_label": (_comb(roles={"fst": "pos", "sec": "negative", "neu": "neutral"}),
                                "combinational.roles.fst", "not a label of the Hutto & Gilbert bins"),
    "bins_overlap_positive": (_comb(data={"neutral_within": 2.0}), "combinational.data.positive_above",
                              "both positive and neutral"),
    "bins_overlap_negative": (_comb(data={"negative_below": -0.1}), "combinational.data.negative_below",
                              "both negative and neutral"),
    "bin_empty": (_comb(data={"positive_above": 4.0}), "combinational.data.positive_above",
                  "leaves no sentence positive"),
    "template_without_label": (_comb(template="{S} It is good."), "combinational.template", "has no {LABEL}"),
    "variant_template_without_s": (_comb(variants=[{"name": "a", "template": "It is {LABEL}."}]),
                                   "combinational.variants[0].template", "has no {S}"),
    "local_data_without_path": (_comb(data={"source": "local"}, roles={"fst": "a", "sec": "b", "neu": "c"}),
                                "combinational.data.path", "required with source: local"),
    "k_twice": (_comb(ks=[4, 4]), "combinational.ks", "non-unique"),
    "inoculation_no_task": (_inoc(tasks=[]), "inoculation.tasks", "analyses no task"),
    "inoculation_unknown_task": (_inoc(tasks=["sent", "snet"]), "inoculation.tasks",
                                 "'snet' is not a task of this config"),
    "inoculation_lrs_one_id": (_inoc(lrs=[1.0e-3, 1.0000001e-3]), "inoculation.lrs",
                               "have the same job id (lr0.001"),
    "inoculation_lr_twice": (_inoc(lrs=[1.0e-3, 2.0e-3, 1.0e-3]), "inoculation.lrs", "is listed twice"),
    "inoculation_original_from_unknown": (_inoc(original_from="original_test"), "inoculation.original_from",
                                          "'original_test'"),
    "inoculation_gap_margin_negative": (_inoc(gap_margin=-1), "inoculation.gap_margin", "-1"),
    "inoculation_drop_margin_text": (_inoc(drop_margin="two"), "inoculation.drop_margin", "'two'"),
    "inoculation_challenge_ids_collide": (
        {**_inoc(challenge=["a_b", "a-b"]),
         "tasks__sent__ood": [{"name": "a_b", "source": "hutto", "set": "nyt", "max_examples": 20},
                              {"name": "a-b", "source": "hutto", "set": "tweets", "max_examples": 20}]},
        "inoculation.challenge[1]", "the same unit id (set-a-b)"),
}


@pytest.mark.parametrize("name", list(DRY_RUN_CASES))
def test_dry_run_refuses(tmp_path, name):
    """In-process: beluga.workflow.config.load_workflow, which rules/common.smk calls before any rule."""
    changes, field, words = DRY_RUN_CASES[name]
    line, cfg_file = load_error(tmp_path / "wd", config_with(**changes), f"field '{field}'")
    assert line.startswith(f"config file {cfg_file}: ") and words in line, line


@pytest.mark.slow
def test_an_analysis_setting_stops_the_dry_run_in_one_line(tmp_path):
    """The wiring: snakemake -n prints the in-process line after its WorkflowError header."""
    changes, field, _ = DRY_RUN_CASES["inoculation_unknown_task"]
    expected, _ = load_error(tmp_path / "in_process", config_with(**changes))
    wd = tmp_path / "wd"
    out, cfg_file = smk_config(wd, config_with(**changes), "-n")
    line = check_workflow_error(out, f"config file {cfg_file}", f"field '{field}'")
    assert line == expected.replace(str(tmp_path / "in_process.yaml"), str(cfg_file)), (line, expected)
    assert not (wd / "results").exists()


def test_local_data_without_roles_is_refused_in_a_dry_run(tmp_path):
    data = tmp_path / "three.tsv"
    data.write_text("text\tlabel\nfine\tx\n")
    line, cfg_file = load_error(tmp_path / "wd", config_with(**_comb(data={"source": "local", "path": str(data)})),
                                "field 'combinational.roles'")
    assert line.startswith(f"config file {cfg_file}: ") and "a local data set needs the label values" in line, line


# ---------------------------------------------------------------- a config that is code (YTE templating)
YTE_NEEDLES = ("field '__use_yte__'", "turns on Snakemake's YTE templating", "BELUGA_ALLOW_YTE=1")


def _yte_config(path: Path, use_yte="true") -> Path:
    """conftest's BASE config with YTE turned on and ``seed: ?40 + 2`` (42 once templated)."""
    cfg = config_with(seed=...)
    path.write_text(f"__use_yte__: {use_yte}\n" + yaml.safe_dump(cfg, sort_keys=False) + "seed: ?40 + 2\n")
    return path


def _snakemake_loads(path: Path) -> dict:
    """The config as snakemake hands it to the Snakefile (--configfile): YTE's expressions run, the field gone."""
    from snakemake.common.configfile import load_configfile

    return dict(load_configfile(str(path)))


def test_a_yte_config_is_refused_by_the_dry_run(tmp_path, monkeypatch):
    """In-process: load_workflow with the config snakemake made of the file (rules/common.smk's call)."""
    from beluga.workflow.config import load_workflow

    monkeypatch.delenv("BELUGA_ALLOW_YTE", raising=False)
    cfg_file = _yte_config(tmp_path / "yte.yaml")
    config = _snakemake_loads(cfg_file)
    assert config["seed"] == 42 and "__use_yte__" not in config   # what snakemake did before the project runs
    (tmp_path / "wd").mkdir()
    monkeypatch.chdir(tmp_path / "wd")
    with pytest.raises(ConfigError) as e:
        load_workflow(config, [str(cfg_file)])
    line = check_exc(e, f"config file {cfg_file}: ", *YTE_NEEDLES)
    assert line.startswith(f"config file {cfg_file}: field '__use_yte__'"), line
    assert not any((tmp_path / "wd").iterdir())


def test_a_yte_config_is_loaded_when_allowed_and_yte_off_is_data(tmp_path, monkeypatch):
    from beluga.workflow.config import load_workflow

    (tmp_path / "wd").mkdir()
    monkeypatch.chdir(tmp_path / "wd")
    cfg_file = _yte_config(tmp_path / "yte.yaml")
    monkeypatch.setenv("BELUGA_ALLOW_YTE", "1")
    assert load_workflow(_snakemake_loads(cfg_file), [str(cfg_file)]).config["seed"] == 42
    monkeypatch.setenv("BELUGA_ALLOW_YTE", "0")   # only 1 allows it
    with pytest.raises(ConfigError) as e:
        load_workflow(_snakemake_loads(cfg_file), [str(cfg_file)])
    check_exc(e, *YTE_NEEDLES)
    off = _yte_config(tmp_path / "off.yaml", use_yte="false")   # nothing templated: '?40 + 2' is a string
    with pytest.raises(ConfigError) as e:
        load_workflow(_snakemake_loads(off), [str(off)])
    check_exc(e, f"config file {off}: field 'seed'")


def test_a_yte_config_is_refused_by_the_plan(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BELUGA_ALLOW_YTE", raising=False)
    cfg_file = _yte_config(tmp_path / "yte.yaml")
    line = check_plan_error(capsys, ["--configfile", cfg_file], [f"config file {cfg_file}: ", *YTE_NEEDLES])
    assert line.startswith(f"error: config file {cfg_file}: field '__use_yte__'"), line


@pytest.mark.slow
def test_a_yte_config_stops_snakemake_in_one_line(tmp_path):
    """The wiring: snakemake -n prints the line after its WorkflowError header; nothing written."""
    cfg_file = _yte_config(tmp_path / "yte.yaml")
    wd = tmp_path / "wd"
    wd.mkdir()
    env = {k: v for k, v in ENV.items() if k != "BELUGA_ALLOW_YTE"}
    out = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(wd), "--configfile", str(cfg_file),
                          "-n"], capture_output=True, text=True, env=env, timeout=300)
    check_workflow_error(out, f"config file {cfg_file}: field '__use_yte__'", *YTE_NEEDLES[1:])
    assert not (wd / "results").exists()


# ---------------------------------------------------------------- the package functions the DAG calls
BLOCK = {"model": "default", "model_revision": None, "template": TEMPLATE, "label_words": WORDS, "max_length": 64,
         "training": {"lr": 5e-5, "batch_size": 16, "epochs": 3}, "too_long": "drop"}


@pytest.mark.parametrize("a,b", [("great", "Great"), ("great", " great "), ("café", "cafe"), ("great!", "great !"),
                                 ("very good", "very  good"), ("ｇｒｅａｔ", "great")])
def test_label_words_alike_are_refused(a, b):
    """Two words a BERT-style uncased tokenizer reads as one (case, accents, spaces,
    full-width forms) make two cells identical with opposite labels."""
    assert comb.word_key(a) == comb.word_key(b)
    with pytest.raises(ConfigError) as e:
        comb.variants({**BLOCK, "label_words": {"fst": a, "sec": "terrible", "neu": b}})
    check_exc(e, "field 'combinational.label_words'", "fst/neu (label 1)")


def test_label_words_that_differ_are_kept():
    for words in (WORDS, {"fst": "good", "sec": "goods", "neu": "ok"}, {"fst": "verygood", "sec": "very good",
                                                                       "neu": "fine"}):
        assert list(comb.variants({**BLOCK, "label_words": words})) == ["default"]


def test_words_the_tokenizer_makes_identical_are_refused_before_training():
    """Two emoji are two words, but both are the unknown token to MiniLM: the job refuses
    them when it measures the inputs (fit_inputs), before any training."""
    from transformers import AutoTokenizer

    from beluga.model.modeling import default_model_path

    tok = AutoTokenizer.from_pretrained(default_model_path())
    words = {"fst": "\N{THUMBS UP SIGN}", "sec": "\N{THUMBS DOWN SIGN}", "neu": "okay"}
    comb.variants({**BLOCK, "label_words": words})   # different words: the DAG cannot know
    pool = comb.split_pool(pd.DataFrame([{"example_id": f"{r}{i}", "text": f"a sentence {i}", "label": r, "role": r}
                                         for r in comb.COMB_ROLES for i in range(4)]), n_test=1, seed=0)
    with pytest.raises(ConfigError) as e:
        comb.fit_inputs(pool, words, TEMPLATE, tok, 32)
    check_exc(e, "field 'combinational.label_words'", "same tokens with this model's tokenizer")
    assert comb.fit_inputs(pool, WORDS, TEMPLATE, tok, 32)["kept"].all()


def test_two_roles_on_one_label_name_the_role_not_a_missing_label():
    """Before, the second role replaced the first and the job said that no example had
    the first role's label (a wrong message); both checks now name the duplicated role."""
    df = pd.DataFrame({"example_id": ["1", "2", "3"], "text": ["a", "b", "c"],
                       "label": ["positive", "negative", "neutral"]})
    with pytest.raises(ConfigError) as e:
        comb.assign_roles(df, {"fst": "positive", "sec": "positive", "neu": "neutral"})
    check_exc(e, "field 'combinational.roles.sec'", "also role fst's")


def test_cut_points_name_the_field_at_job_time_too():
    with pytest.raises(ConfigError) as e:
        comb.hutto_three_way(["nyt"], -1.0, 0.5, 0.2)
    check_exc(e, "field 'combinational.data.positive_above'", "both positive and neutral")


def test_inoculation_lr_ids_are_kept_and_alike_refused():
    """Job ids of ordinary rates are unchanged (existing results stay valid); two rates
    with one id would have been one job, the second dropped."""
    assert [ino.lr_id(x) for x in ino.lr_grid([2.0e-5, 1.0e-4, 1.0e-3])] == ["lr2e-05", "lr0.0001", "lr0.001"]
    assert ino.lr_grid("paper_nli") == ino.LR_GRIDS["paper_nli"]
    with pytest.raises(ConfigError) as e:
        ino.lr_grid([0.001, 0.0010000001])
    check_exc(e, "field 'inoculation.lrs'", "0.001 and 0.0010000001 have the same job id")


def test_inoculation_tasks_empty_is_refused_null_is_every_task():
    ino.check_tasks(None, ["sent"])
    ino.check_tasks(["sent"], ["sent"])
    with pytest.raises(ConfigError) as e:
        ino.check_tasks([], ["sent"])
    check_exc(e, "field 'inoculation.tasks'", "leave it null (every task)")


# ---------------------------------------------------------------- the cost plan
def _plan_counts(configfile: Path, overrides=()) -> dict[str, int]:
    config = load_config(str(configfile), list(overrides))
    counts: dict[str, int] = {}
    for ln in plan(config, REFERENCE["cpu"]):
        counts[ln.rule] = counts.get(ln.rule, 0) + ln.jobs
    return counts


def _dry_run_counts(tmp_path: Path, configfile: Path) -> dict[str, int]:
    counts = planned_jobs(tmp_path / f"wd-{configfile.stem}", configfiles=(configfile,))
    return {r: n for r, n in counts.items() if r in TRAINING_RULES}


def _default_with(tmp_path: Path, name: str, **blocks) -> Path:
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    for key, value in blocks.items():
        cfg[key] = {**(cfg.get(key) or {}), **value}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.mark.parametrize("how", ["same path", "symbolic link", "hard link", "throughput table"])
def test_plan_json_never_writes_over_its_inputs(tmp_path, capsys, how):
    """``plan --configfile my.yaml --json my.yaml`` (or a symbolic / hard link to it, or the throughput table)
    would replace an input by the plan: refused before planning, naming --json and the file, inputs unchanged."""
    path = _default_with(tmp_path, "my")
    table = tmp_path / "bench.json"
    table.write_text('{"throughput": {"cpu": {"train_seq_per_s": 5.0, "predict_seq_per_s": 50.0}}}')
    target, label, extra = path, "config file", []
    if how in ("symbolic link", "hard link"):
        target = tmp_path / "link.yaml"
        target.symlink_to(path) if how == "symbolic link" else os.link(path, target)
    elif how == "throughput table":
        target, label, extra = table, "throughput table", ["--throughput", table]
    before = {p: p.read_bytes() for p in (path, table)}
    check_plan_error(capsys, [*extra, "--configfile", path, "--json", target],
                     ["field '--json'", f"is the {label} itself", str(path if label == "config file" else table)])
    assert {p: p.read_bytes() for p in (path, table)} == before


@pytest.mark.slow
@pytest.mark.parametrize("analyses", ["none", "inoculation", "combinational", "both"])
def test_plan_counts_the_jobs_of_the_dry_run(tmp_path, analyses):
    """The default config with inoculation and / or combinational OOD switched on: the plan's
    jobs per rule are the dry run's (before, the plan printed the same 64 jobs for all four);
    `--config inoculation={enabled: true}` gives the plan the same jobs as the config file."""
    on = {"inoculation": ["inoculation"], "combinational": ["combinational"],
          "both": ["inoculation", "combinational"], "none": []}[analyses]
    path = _default_with(tmp_path, analyses, **{a: {"enabled": True} for a in on})
    dry = _dry_run_counts(tmp_path, path)
    planned = _plan_counts(path)
    assert planned == dry, (planned, dry)
    for a, rule in (("inoculation", "inoculate"), ("combinational", "combinational_train")):
        assert (rule in planned) == (a in on)
    if on:
        assert _plan_counts(REPO / "config.yaml", [f"{a}={{enabled: true}}" for a in on]) == dry


@pytest.mark.slow
def test_plan_counts_finetune_keep_and_kept_models_as_the_dry_run(tmp_path):
    """LP-FT: the LP fold that LP-FT starts from is rule finetune_keep; with keep_models every
    model is trained by finetune_model and only the configured methods are predicted. With
    lp_ft's lp_epochs, LP-FT's own LP stage (lp_ft_lp) is the kept fold, lp's folds are fused."""
    for keep, lp_epochs in ((False, None), (True, None), (False, 1.5)):
        cfg = config_with(methods=["lp_ft"] if lp_epochs is None else ["lp", "lp_ft"], partitions=["seen", "type"],
                          keep_models=keep, training__method_hparams={"lp_ft": {"lp_epochs": lp_epochs}},
                          inoculation__doses=[2], inoculation__lrs=[1.0e-3], inoculation__enabled=True,
                          combinational__enabled=True, combinational__ks=[4], combinational__n_test=5)
        cfg_file = tmp_path / f"keep-{keep}-{lp_epochs}.yaml"
        cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
        planned, dry = _plan_counts(cfg_file), _dry_run_counts(tmp_path, cfg_file)
        assert planned == dry, (keep, planned, dry)
        assert ("finetune_model" in dry) == keep and ("finetune_keep" in dry) != keep
        if lp_epochs is not None:   # per fold: lp and lp_ft fused, the LP stage kept
            assert dry["finetune"] == 2 * dry["finetune_keep"]


def test_plan_costs_the_related_analyses(tmp_path, capsys):
    path = _default_with(tmp_path, "both", inoculation={"enabled": True}, combinational={"enabled": True})
    rc, out, err = plan_cli(capsys, "--configfile", path, "--no-calibrate")
    assert rc == 0, err
    head = out.splitlines()[0]
    jobs = sum(_plan_counts(path).values())
    assert f": {jobs:,} training / prediction jobs" in head, head
    hours = {ln.split()[0]: float(ln.split()[-2]) for ln in out.splitlines()
             if ln.startswith(("inoculate ", "combinational_train ")) and ln.endswith("%")}   # the cost table
    assert hours and all(h > 0 for h in hours.values()), out
    for variant in ("minilm-it-is", "minilm-sentence-is", "minilm-lr2e-5-it-is", "minilm-lr2e-5-sentence-is"):
        one_line(out, "combinational_train", f" {variant} ")
    assert "per task: sent " in out and "combinational " in one_line(out, "per task:")
    assert "inoculate" in one_line(out, "per rule:")


PLAN_FILE_CASES = {
    # name: (file name, content, option, field, words)
    "config_a_yaml_list": ("list.yaml", "- a\n- b\n", "--configfile", "'(top level)'",
                           "a mapping of keys to values is needed, not a list"),
    "config_not_yaml": ("bad.yaml", "tasks: [\n", "--configfile", "'(top level)'", "not valid YAML"),
    "config_not_text": ("bin.yaml", b"\xff\xfe\x00tasks", "--configfile", "'(top level)'", "not a UTF-8 text file"),
    "throughput_not_json": ("t.json", "nope{", "--throughput", "'(top level)'", "not JSON"),
    "throughput_a_list": ("t.json", "[1, 2]", "--throughput", "'(top level)'", "a JSON object is needed"),
    "throughput_device_a_list": ("t.json", '{"throughput": {"cpu": [1]}}', "--throughput", "'throughput.cpu'",
                                 "an object of figures is needed"),
    "throughput_rate_a_word": ("t.json", '{"throughput": {"cpu": {"train_seq_per_s": "fast"}}}', "--throughput",
                               "'throughput.cpu.train_seq_per_s'", "'fast' is not a positive number"),
}


@pytest.mark.parametrize("name", list(PLAN_FILE_CASES))
def test_plan_bad_files_are_one_line(tmp_path, capsys, name):
    fname, content, option, field, words = PLAN_FILE_CASES[name]
    f = tmp_path / fname
    f.write_bytes(content) if isinstance(content, bytes) else f.write_text(content)
    kind = "config file" if option == "--configfile" else "throughput table"
    check_plan_error(capsys, [option, f], [f"{kind} {f}: field {field}", words])


def test_plan_bad_override_and_dag_checks_are_one_line(capsys):
    """A --config value that is not YAML; a config the DAG refuses is refused by the plan too,
    naming the config file."""
    check_plan_error(capsys, ["--config", "tasks=["], ["--config: field 'tasks'", "not valid YAML"])
    cfg = str(REPO / "config.yaml")
    check_plan_error(capsys, ["--config", "inoculation={enabled: true, tasks: []}"],
                     [f"config file {cfg}: field 'inoculation.tasks'", "analyses no task"])
    check_plan_error(capsys, ["--config", "inoculation={enabled: true, lrs: [0.001, 0.0010000001]}"],
                     [f"config file {cfg}: field 'inoculation.lrs'", "same job id"])
    check_plan_error(capsys, ["--config", "combinational={label_words: {sec: Great}}"],
                     [f"config file {cfg}: field 'combinational.label_words'", "same word"])
    check_plan_error(capsys, ["--config", "seed=3.0"], [f"config file {cfg}: field 'seed'", "not an integer"])


@pytest.mark.parametrize("override,field,words", [
    ("seed=-1", "seed", "less than the minimum of 0"),
    (f"seed={2**64}", "seed", "greater than the maximum of 4294967295"),
    ("seeds=[3,²]", "seeds[1]", "'²' is not of type 'integer'"),   # ('²'.isdigit() is true, int('²') fails)
    (f"seeds=[1,{2**32}]", "seeds[1]", "greater than the maximum"),
    ("tasks={sent: {suite: {seed: -3}}}", "tasks.sent.suite.seed", "less than the minimum of 0"),
])
def test_seeds_outside_numpy_and_torch_range_are_one_line(capsys, override, field, words):
    """Every seed of the config (and of --config) within numpy's and torch's common range, 0 <= seed < 2**32,
    in ASCII digits: refused while the DAG is built, before train_iid would crash on it (issue 36)."""
    check_plan_error(capsys, ["--config", override], [f"config file {REPO / 'config.yaml'}: field '{field}'", words])


@pytest.mark.parametrize("seed", ["-1", "²", str(2**32)])
def test_seed_option_outside_the_range_is_one_line(capsys, seed):
    """``suite build --seed`` / ``suite perturb --seed``: the same range, argparse's one line, exit 2."""
    with pytest.raises(SystemExit) as excinfo:
        cli_main(["suite", "perturb", "--seed", seed])
    err = capsys.readouterr().err.strip().splitlines()
    assert excinfo.value.code == 2 and "argument --seed" in err[-1] and "0 <= seed < 2**32" in err[-1], err


def numeric_options(parser=None, prefix=()) -> list[tuple[tuple[str, ...], str, object]]:
    """(the command, e.g. ("suite", "build"); the option; its argparse type) of every option with a type."""
    import argparse

    from beluga.cli.parser import build_parser

    found = []
    for action in (parser or build_parser())._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += numeric_options(sub, (*prefix, name))
        elif action.type is not None:
            found.append((prefix, action.option_strings[-1], action.type))
    return found


def test_every_numeric_option_is_finite_and_in_range():
    """Every number the command line takes (each option with a type) refuses inf, nan, a negative number and
    1e400 (inf as a float) in argparse's one line; before, plan --train-rate inf divided by zero and
    --fixed-s inf printed 'inf core-h, nan%' with exit status 0."""
    import argparse

    options = numeric_options()
    names = {o for _, o, _ in options}
    assert {"--train-rate", "--predict-rate", "--fixed-s", "--gpus", "--cores", "--concurrent-jobs", "--batch-size",
            "--max-length", "--doc-stride", "--failures", "--cases", "--samples", "--max-words", "--seed"} <= names
    for command, option, kind in options:
        assert kind("10") == 10, (command, option)
        for bad in ("inf", "-inf", "nan", "-1", "1e400", "x"):
            try:
                kind(bad)
            except argparse.ArgumentTypeError:
                continue
            pytest.fail(f"{' '.join(command)} {option} took {bad!r}")


@pytest.mark.parametrize("option,value,words", [
    ("--train-rate", "inf", "a finite number > 0"), ("--predict-rate", "0", "a finite number > 0"),
    ("--fixed-s", "inf", "a finite number >= 0"), ("--fixed-s", "nan", "a finite number >= 0"),
    ("--cores", "0", "a whole number >= 1"), ("--gpus", "0", "a whole number >= 1")])
def test_plan_numbers_out_of_range_are_one_line(capsys, option, value, words):
    """``plan --train-rate inf`` / ``--fixed-s inf``: argparse's one line naming the option, exit 2, nothing
    printed on stdout; the package function refuses them too (called from Python)."""
    from beluga.workflow.plan import plan_command

    with pytest.raises(SystemExit) as excinfo:
        cli_main(["plan", option, value])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert excinfo.value.code == 2 and out == "" and f"argument {option}: '{value}' is not {words}" in lines[-1], err
    assert "Traceback" not in err
    for field, kwargs in (("train_seq_per_s", {"train_rate": float("inf")}), ("fixed_s_per_job", {"fixed_s": 1e400}),
                          ("predict_seq_per_s", {"predict_rate": float("nan")})):
        with pytest.raises(ConfigError, match=f"--{field}: must be a finite positive number"):
            plan_command(None, **kwargs)


def test_label_words_partly_set_take_the_other_defaults():
    """``combinational: {label_words: {sec: awful}}`` keeps great / okay for fst / neu (before, fst and
    neu were missing and the job stopped on a KeyError)."""
    cfg = load_config(None, ["combinational={label_words: {sec: awful}, variants: []}"])
    runs = Runs(cfg, Paths(cfg["results"]), str(cfg["data_dir"]))
    assert runs.comb_variant()["label_words"] == {"fst": "great", "sec": "awful", "neu": "okay"}
