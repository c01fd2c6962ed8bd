"""``python -m beluga plan`` before any download: every configuration of configs/ plans in a folder with no
data, counting the published sizes of what is not staged (CheckList's release suites' shape, the i.i.d. and OOD
sets' published sizes: beluga/suites/published.py, beluga/data/published.py) and naming them in its ``sizes:``
line; ``--no-assume-paper-data`` still refuses. The figures against hand-computed cases, and the stored suite
shape against a recount of the release tarballs where ../shared/data has them."""

import importlib.util
import json
import shutil

import pytest
from conftest import REPO

from beluga.core.errors import BelugaError
from beluga.data.published import published_hub_size, published_iid
from beluga.suites.published import OUT, capped_sequences, published_counts, published_functionalities
from beluga.workflow.plan import plan_command

CHECKLIST = REPO.parent / "shared" / "data" / "checklist"   # ../shared/data beside the checkout
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
#: the configurations that read fetched data (the others: package data and their own spec)
FETCHED = {"paper.yaml", "inoculation_paper.yaml", "combinational_paper.yaml", "gluex_paper.yaml",
           "shared-cpu.yaml"}


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    """A working directory holding a copy of configs/ and no data (relative paths resolve here)."""
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _sizes(text: str) -> str | None:
    return next((ln for ln in text.splitlines() if ln.startswith("sizes:")), None)


@pytest.mark.parametrize("config", [c.name for c in CONFIGS])
def test_every_configuration_plans_with_no_data_staged(no_data, config):
    text = plan_command(f"configs/{config}", calibrate=False)
    total = next(ln for ln in text.splitlines() if ln.startswith("total: "))
    assert float(total.split()[1].replace(",", "")) > 0
    sizes = _sizes(text)
    if config in FETCHED:
        assert sizes is not None and "published figures, not counted (not staged)" in sizes
    if config == "paper.yaml":
        assert "sent: CheckList's sentiment release suite (sentiment_suite.tar.gz: 38 functionalities, 86,420 " \
               "cases" in sizes
        assert "qqp release suite (qqp_suite.tar.gz: 53 functionalities, 63,216 cases" in sizes
        assert "squad release suite (squad_suite.tar.gz: 24 functionalities, 13,311 cases" in sizes
        # the paper's split of the suites' cases (50 / 25 / 25 per functionality), as counted from the files
        assert "train 43,212 cases" in text and "train 31,606 cases" in text and "train 6,655 cases" in text
    if config == "inoculation_paper.yaml":
        assert "mnli: GLUE MNLI (MNLI.zip: 392,702 train / 9,815 dev) (i.i.d.)" in sizes
        assert "squad: SQuAD v1.1" in sizes and "size unknown (counted 0): OOD sets word_overlap" in sizes
    if config == "gluex_paper.yaml":
        assert "mrpc_bert: GLUE MRPC train + validation" in sizes
        assert "amazon 4,000,000" in sizes and "imdb 50,000" in sizes and "qqp 404,276" in sizes
        assert "i.i.d. sizes of mrpc_bert: 3,668 / 204 / 204 train / val / test" in text


@pytest.mark.parametrize("config", ["paper.yaml", "inoculation_paper.yaml", "gluex_paper.yaml"])
def test_no_assume_paper_data_still_refuses(no_data, config):
    with pytest.raises(BelugaError, match="does not exist|is not a folder"):
        plan_command(f"configs/{config}", calibrate=False, assume_paper_data=False)


SUITE = {"path": "data/checklist/release/sentiment_suite.tar.gz", "paper_fixes": True,
         "max_cases_per_functionality": None, "max_inputs_per_case": None, "type_folds": "declared"}
HAND = ["single positive words", "typos", "add random urls and handles"]


def test_published_counts_by_hand():
    # 34 one-input MFT cases: 18 / 8 / 8 (round(8.5) = 8), one sequence each; 500 two-input INV cases: one pair
    # item each (2 sequences); 500 INV cases of 22 inputs: still one pair item each
    got = published_counts(SUITE, "sentiment", (0.5, 0.25, 0.25), "allow", "project", set(HAND))
    assert got["single positive words"] == {"cases": {"train": 18, "val": 8, "test": 8},
                                            "inputs": {"train": 18, "val": 8, "test": 8}, "seqs": 18}
    assert got["typos"] == {"cases": {"train": 250, "val": 125, "test": 125},
                            "inputs": {"train": 500, "val": 250, "test": 250}, "seqs": 500}
    assert got["add random urls and handles"]["inputs"]["test"] == 125 * 22
    capped = published_counts({**SUITE, "max_cases_per_functionality": 4, "max_inputs_per_case": 6}, "sentiment",
                              (0.5, 0.25, 0.25), "allow", "project", set(HAND))
    assert capped["add random urls and handles"] == {"cases": {"train": 2, "val": 1, "test": 1},
                                                     "inputs": {"train": 12, "val": 6, "test": 6}, "seqs": 4}
    with pytest.raises(BelugaError, match="repeat another case"):   # CheckList's suites repeat cases
        published_counts(SUITE, "sentiment", (0.5, 0.25, 0.25), "refuse", "project", {"used to, but now"})


def test_capped_sequences_by_the_items():
    assert capped_sequences(12, 12, 6) == 6     # an MFT trained input by input keeps 6 inputs
    assert capped_sequences(10, 11, 6) == 5     # a label-checked DIR: the original is not trained
    assert capped_sequences(2, 22, 6) == 2      # one pair item
    assert capped_sequences(3, 11, 6) == 3      # a reference DIR_LABEL item: at most 3
    assert capped_sequences(7, 8, None) == 7


def test_published_functionalities_cap_and_fold_types():
    table = published_functionalities({**SUITE, "path": "x/qqp_suite.tar.gz", "max_cases_per_functionality": 4,
                                       "type_folds": "trained"}, "qqp")
    assert len(table) == 53 and table["n_cases"].max() == 4
    synonyms = table[table["functionality"].str.contains("replaces synonyms")].iloc[0]
    assert (synonyms["test_type"], synonyms["fold_type"]) == ("INV", "MFT")   # trained as MFT under paper_fixes


def test_published_iid_and_hub_sizes():
    assert published_iid({"source": "mnli", "path": "iid/mnli"})[0] == {"train": 392_702, "val": 4_907, "test": 4_908}
    assert published_iid({"source": "sst2", "path": "x", "n_train": 500})[0]["train"] == 500
    mrpc = published_iid({"source": "data/iid/mrpc/mrpc.tsv", "n_val": 204, "n_test": 204})
    assert mrpc[0] == {"train": 3_668, "val": 204, "test": 204}
    assert published_iid({"source": "data/my.tsv", "n_val": 10, "n_test": 10}) is None   # unknown: read it
    assert published_hub_size({"dataset": "imdb", "split": "train+test"})[0] == 50_000
    assert published_hub_size({"dataset": "glue", "dataset_config": "mrpc", "split": "train+validation"})[0] == 4_076
    assert published_hub_size({"dataset": "imdb", "split": "unsupervised"}) is None


@pytest.mark.slow
@pytest.mark.skipif(not (CHECKLIST / "release" / "squad_suite.tar.gz").exists(),
                    reason="../shared/data/checklist/release/ is absent: the stored shape cannot be recounted")
def test_stored_shape_recounts_from_the_release():
    spec = importlib.util.spec_from_file_location("published_suites", REPO / "scripts" / "published_suites.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stored = json.loads(OUT.read_text())["suites"]["squad"]
    assert script.count_shape(CHECKLIST / "release" / "squad_suite.tar.gz", "read", True) == stored["paper_fixes_true"]
