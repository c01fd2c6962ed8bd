"""Where the data of issue 40 come from: GLUE's MNLI, QNLI, RTE, CoLA and STS-B archives (i.i.d.
sources, :mod:`beluga.data.glue`) and the challenge / OOD sets of the related papers
(:mod:`beluga.data.challenge`), as ``(path in the data folder, URL, published SHA-256 or None,
what)`` rows that :mod:`beluga.data.fetch` turns into its :data:`~beluga.data.fetch.REMOTES`. None
of these files has a checksum published by its authors, so each is recorded in the lock at the
first download (later downloads must match), as for SST-2 and QQP.

Which files a configuration fetches follows its sources (:func:`beluga.data.fetch.config_files`):
an i.i.d. source's archive when ``iid.path`` is the data folder's ``iid/<source>``
(:data:`IID_FILES`), and an OOD entry's files (:func:`ood_paths`: by its ``source``, ``set`` and
``split``) when its folder (``path``, by default :data:`OOD_DIRS`) is the data folder's, and, with
``inoculation.samples: released``, Liu et al.'s released per-dose samples of a training split such an entry
reads (:func:`released_doses`).

Not fetched (documented in docs/OOD.md): the Twitter paraphrase corpus (SemEval-2015 PIT; its
repository github.com/cocoxu/SemEval-PIT2015 publishes only the test labels and a sample, the
data files come from the organisers under Twitter's terms: ``source: local`` with a copy), GLUE-X's
own re-collected sets (Grammar Test for CoLA, NewsQA-as-QNLI: the authors' Google Drive folder
linked from github.com/YangLinyi/GLUE-X, no stable file URLs). Yelp Review Full (seed 002) is fetched
when a combinational data's path (the block's or a variant's) names its path (:data:`YELP_ARCHIVE`, the
default of ``source: yelp``; read by :mod:`beluga.data.yelp`), GLUE MNLI's archive when a ``source: mnli``
data's folder is the data folder's ``iid/mnli`` (:data:`COMB_DATA_PATHS`).
"""

from __future__ import annotations

import re

#: GLUE's archives, where GLUE's download_glue_data.py (github.com/nyu-mll/GLUE-baselines, the
#: W4ngatang gist it points to) and Hugging Face's glue loader fetch them; SST-2 / QQP are in fetch.py
GLUE_URL = "https://dl.fbaipublicfiles.com/glue/data/{name}"
#: Liu, Schwartz & Smith (NAACL 2019)'s released challenge splits: the S3 bucket every training config of
#: github.com/nelson-liu/inoculation-by-finetuning (training_configs/*) reads its train / test data from
LIU_URL = "https://s3-us-west-2.amazonaws.com/ai2-nelsonl/adversarial/data/{name}"
#: HANS pinned to the repository's last commit (github.com/tommccoy1/hans, 2021-01-27); the files are those
#: the repository's README and Hugging Face's hans loader name
HANS_COMMIT = "7299f6f657089ce06a0f98e7e81f8d0f5b7741ce"
HANS_URL = "https://raw.githubusercontent.com/tommccoy1/hans/{commit}/{name}"
#: Jia & Liang (EMNLP 2017)'s CodaLab worksheet 0xc86d3ebe69a3427d91f9aaa63f7d1e7d: the AddSent and
#: AddOneSent bundles (the files sample1k-HCVerifyAll.json / sample1k-HCVerifySample.json; the URLs
#: Hugging Face's squad_adversarial loader uses)
CODALAB_URL = "https://worksheets.codalab.org/rest/bundles/{bundle}/contents/blob/"

#: the i.i.d. archive of each GLUE source, in its folder ``iid/<source>``
IID_FILES = {"mnli": "iid/mnli/MNLI.zip", "qnli": "iid/qnli/QNLIv2.zip", "rte": "iid/rte/RTE.zip",
             "cola": "iid/cola/CoLA.zip", "stsb": "iid/stsb/STS-B.zip"}

#: each challenge / OOD source's folder in the data folder (an entry's default ``path``)
OOD_DIRS = {"snli": "ood/snli", "mnli_mismatched": "iid/mnli", "sick": "ood/sick", "hans": "ood/hans",
            "scitail": "ood/scitail", "naik": "ood/naik", "adversarial_squad": "ood/adversarial_squad"}

#: Naik et al. (COLING 2018)'s stress tests: the archive their repository (github.com/AbhilashaRavichander/
#: NLI_StressTest, README) links on Google Drive (file 1faGA5pHdu5Co8rFhnXn-6jbBYC2R1dhw), through Drive's
#: direct-download endpoint with the large-file confirmation given (``confirm=t``: without it Drive answers a
#: file this size with an HTML warning page). Should Drive still answer with a page, the reader stops with
#: "cannot be read as a zip archive": download the archive by hand from the README's link, put it at this
#: path and delete its lock entry (or serve it from ``fetch.mirror``).
NAIK_ARCHIVE = "ood/naik/Stress_Tests.zip"
NAIK_DRIVE_URL = ("https://drive.usercontent.google.com/download?id=1faGA5pHdu5Co8rFhnXn-6jbBYC2R1dhw"
                  "&export=download&confirm=t")

#: Naik et al.'s sets: (the evaluation file in their archive, MultiNLI matched genres; Liu et al.'s
#: training split; Liu et al.'s evaluation file). Liu et al.'s files are under ood/naik/liu2019/<same path>.
#: spelling: the archive's content-word swap file (the archive also has swap / function-word / keyboard
#: variants); numerical_reasoning: the archive's one file (no split), Liu et al. split it into a
#: 1,000-example training sample and a test part; antonym: evaluation only (every label contradiction;
#: the inoculation paper leaves it out).
NAIK_SETS: dict[str, tuple[str, str | None, str | None]] = {
    "word_overlap": ("Word_Overlap/multinli_0.9_taut2_matched.jsonl",
                     "word_overlap_adversary/multinli_0.9_train_word_overlap_adversary.jsonl",
                     "word_overlap_adversary/multinli_0.9_dev_matched_word_overlap_adversary.jsonl"),
    "negation": ("Negation/multinli_0.9_negation_matched.jsonl",
                 "negation_adversary/multinli_0.9_train_negation_adversary.jsonl",
                 "negation_adversary/multinli_0.9_dev_matched_negation_adversary.jsonl"),
    "length_mismatch": ("Length_Mismatch/multinli_0.9_length_mismatch_matched.jsonl",
                        "length_mismatch_adversary/multinli_0.9_train_length_mismatch_adversary.jsonl",
                        "length_mismatch_adversary/multinli_0.9_dev_matched_length_mismatch_adversary.jsonl"),
    "spelling": ("Spelling_Error/multinli_0.9_dev_gram_contentword_swap_perturbed_matched.jsonl",
                 "spelling_adversary/multinli_0.9_train_spelling_adversary.jsonl",
                 "spelling_adversary/multinli_0.9_dev_matched_spelling_adversary.jsonl"),
    "numerical_reasoning": ("Numerical_Reasoning/multinli_0.9_quant_hard.jsonl",
                            "numerical_reasoning_adversary/numerical_reasoning_adversary_train.1000.jsonl",
                            "numerical_reasoning_adversary/numerical_reasoning_adversary_test.jsonl"),
    "antonym": ("Antonym/multinli_0.9_antonym_matched.jsonl", None, None),
}

#: Liu et al.'s released doses: the nested per-dose samples of each training split that their configs fine-tune on
#: (training_configs/nli_stress_test/*/<set>_adversary/*.<dose>.json and training_configs/adversarial_squad/*/
#: *.<dose>.json, ``train_data_path``): the split's file name with ``.<dose>`` before its extension, for the doses
#: of their tuning scripts (scripts/*/tune_*_fine_tune_lr.sh: 5 ... 1000 and ``all``, the split's own file).
#: Numerical reasoning's training split is itself their 1,000-example sample
#: (``numerical_reasoning_adversary_train.1000.jsonl``): its doses 5 ... 750 are the same name with another number,
#: its 1,000 (and ``all``: no config of theirs trains on more) the split itself
LIU_DOSES = (5, 10, 50, 100, 400, 500, 750, 1000)

#: Adversarial SQuAD's sets (Jia & Liang): the CodaLab bundle and the file name it holds
ADVERSARIAL_SQUAD_SETS = {"AddSent": ("0xb765680b60c64d088f5daccac08b3905", "sample1k-HCVerifyAll.json"),
                          "AddOneSent": ("0x3ac9349d16ba4e7bb9b5920e3b1af393", "sample1k-HCVerifySample.json")}
#: Liu et al.'s Adversarial SQuAD release: AddSent-style adversaries on SQuAD's training articles (training
#: split; their configs subsample it from distinct passages) and the evaluation set their configs test on
LIU_SQUAD = {"train": "adversarial-train-set.json", "test": "adversarial-evaluation-set.json"}

#: Yelp Review Full (Zhang, Zhao & LeCun 2015; seed 002's Yelp): the authors' archive on Google Drive (file
#: 0Bz8a_Dbh9QhbZlU4dXhHTFhZQU0, the id torchtext's YelpReviewFull downloads, MD5 f7ddfafed1033f68ec72b9267863af6c
#: there: not a SHA-256, so the lock records one at the first download), read by beluga.data.yelp; fetched when
#: a combinational data's path is this path (source: yelp's default)
YELP_ARCHIVE = "combinational/yelp/yelp_review_full_csv.tar.gz"
YELP_DRIVE_URL = "https://drive.usercontent.google.com/download?id=0Bz8a_Dbh9QhbZlU4dXhHTFhZQU0&export=download&confirm=t"
#: the combinational sources read from the data folder and their default ``path`` in it
#: (beluga.analyses.combinational_data): Yelp's archive, GLUE MNLI's i.i.d. folder
COMB_DATA_PATHS = {"yelp": YELP_ARCHIVE, "mnli": IID_FILES["mnli"].rpartition("/")[0]}

#: the splits an OOD source offers (``split`` of its entry; the first is the default)
OOD_SPLITS = {"snli": ("test", "dev", "train", "all"), "mnli_mismatched": ("test",),
              "sick": ("test", "dev", "train", "all"), "hans": ("test", "train", "all"),
              "scitail": ("test", "dev", "train", "all"), "naik": ("test", "train", "evaluation", "all"),
              "adversarial_squad": ("test", "train", "evaluation", "all")}


def released_dose(entry: dict, dose) -> str | None:
    """The data-folder path, relative to the entry's folder (:data:`OOD_DIRS`; e.g.
    ``liu2019/negation_adversary/multinli_0.9_train_negation_adversary.5.jsonl``), of Liu et al.'s released
    sample of ``dose`` (a number of :data:`LIU_DOSES`) drawn from the training split an OOD entry reads
    (``split: train`` of ``naik`` -- a stress test with their training split -- or of ``adversarial_squad``);
    None for another entry, another dose or ``all`` (the split itself)."""
    if (entry.get("split") or "test") != "train" or str(dose) not in {str(d) for d in LIU_DOSES}:
        return None
    if entry.get("source") == "adversarial_squad":
        return f"liu2019/{LIU_SQUAD['train'].removesuffix('.json')}.{dose}.json"
    train = NAIK_SETS.get(entry.get("set"), (None, None, None))[1] if entry.get("source") == "naik" else None
    if train is None:
        return None
    stem = re.sub(r"\.1000$", "", train.removesuffix(".jsonl"))   # numerical reasoning: the 1,000 sample itself
    return f"liu2019/{stem}.{dose}.jsonl"


def released_doses(entry: dict) -> dict[str, str]:
    """Dose -> :func:`released_dose` for every dose Liu et al. released of an entry's training split ({} for an
    entry without; numerical reasoning's 1000 is its training split's own file)."""
    return {str(d): path for d in LIU_DOSES if (path := released_dose(entry, d)) is not None}


def _liu(path: str, what: str) -> tuple[str, str, None, str]:
    return (f"ood/naik/liu2019/{path}", LIU_URL.format(name=f"nli_stress_test/{path}"), None, what)


def remote_rows() -> list[tuple[str, str, str | None, str]]:
    """Every file of this module: (path in the data folder, URL, published SHA-256 or None, what)."""
    rows = [(rel, GLUE_URL.format(name=rel.rpartition("/")[2]), None, f"GLUE {src.upper()}")
            for src, rel in IID_FILES.items()]
    rows += [
        # SNLI 1.0 (Bowman et al. 2015): the Stanford NLP group's release page, nlp.stanford.edu/projects/snli
        ("ood/snli/snli_1.0.zip", "https://nlp.stanford.edu/projects/snli/snli_1.0.zip", None, "SNLI 1.0"),
        # SICK (Marelli et al. 2014): the Zenodo record of the COMPOSES project's release (Hugging Face's sick)
        ("ood/sick/SICK.zip", "https://zenodo.org/record/2787612/files/SICK.zip", None, "SICK"),
        ("ood/hans/heuristics_evaluation_set.txt",
         HANS_URL.format(commit=HANS_COMMIT, name="heuristics_evaluation_set.txt"), None, "HANS evaluation set"),
        ("ood/hans/heuristics_train_set.txt",
         HANS_URL.format(commit=HANS_COMMIT, name="heuristics_train_set.txt"), None, "HANS training set"),
        # SciTail 1.1 (Khot et al. 2018): AI2's public-datasets bucket (allenai.org/data/scitail; Hugging Face's
        # scitail; the older http://data.allenai.org.s3.amazonaws.com/downloads/SciTailV1.1.zip serves the same)
        ("ood/scitail/SciTailV1.1.zip", "https://ai2-public-datasets.s3.amazonaws.com/scitail/SciTailV1.1.zip",
         None, "SciTail 1.1"),
        (NAIK_ARCHIVE, NAIK_DRIVE_URL, None, "NLI stress tests (Naik et al. 2018)"),
    ]
    for name, (_, train, test) in NAIK_SETS.items():
        if train:
            rows.append(_liu(train, f"NLI stress test {name}, training split (Liu et al. 2019)"))
        if test:
            rows.append(_liu(test, f"NLI stress test {name}, evaluation split (Liu et al. 2019)"))
    for name in NAIK_SETS:
        for dose, path in released_doses({"source": "naik", "set": name, "split": "train"}).items():
            if path != f"liu2019/{NAIK_SETS[name][1]}":
                rows.append(_liu(path.removeprefix("liu2019/"),
                                 f"NLI stress test {name}, released dose {dose} (Liu et al. 2019)"))
    for name, (bundle, file) in ADVERSARIAL_SQUAD_SETS.items():
        rows.append((f"ood/adversarial_squad/{file}", CODALAB_URL.format(bundle=bundle), None,
                     f"Adversarial SQuAD {name} (Jia & Liang 2017)"))
    for part, file in LIU_SQUAD.items():
        rows.append((f"ood/adversarial_squad/liu2019/{file}", LIU_URL.format(name=f"adversarial_squad/{file}"), None,
                     f"Adversarial SQuAD {part} split (Liu et al. 2019)"))
    for dose, path in released_doses({"source": "adversarial_squad", "split": "train"}).items():
        url = LIU_URL.format(name=f"adversarial_squad/{path.removeprefix('liu2019/')}")
        rows.append((f"ood/adversarial_squad/{path}", url, None,
                     f"Adversarial SQuAD training split, released dose {dose} (Liu et al. 2019)"))
    rows.append((YELP_ARCHIVE, YELP_DRIVE_URL, None, "Yelp Review Full (Zhang et al. 2015)"))
    return rows


def ood_paths(entry: dict) -> list[str]:
    """The data-folder paths an OOD entry of a challenge source reads, relative to the source's folder
    (:data:`OOD_DIRS`; e.g. ``Stress_Tests.zip``), in the order they are read; [] for other sources."""
    source, split = entry.get("source"), entry.get("split") or "test"
    if source not in OOD_DIRS:
        return []
    if source == "snli":
        return ["snli_1.0.zip"]
    if source == "mnli_mismatched":
        return ["MNLI.zip"]
    if source == "sick":
        return ["SICK.zip"]
    if source == "scitail":
        return ["SciTailV1.1.zip"]
    if source == "hans":
        files = {"test": ["heuristics_evaluation_set.txt"], "train": ["heuristics_train_set.txt"]}
        return files.get(split, files["train"] + files["test"])
    if source == "naik":
        archive, train, test = NAIK_SETS.get(entry.get("set"), (None, None, None))
        if split == "test":
            return ["Stress_Tests.zip"]
        picked = {"train": (train,), "evaluation": (test,)}.get(split, (train, test))
        return [f"liu2019/{p}" for p in picked if p]
    bundle_file = ADVERSARIAL_SQUAD_SETS.get(entry.get("set"), (None, None))[1]
    if split == "test":
        return [bundle_file] if bundle_file else []
    picked = {"train": ("train",), "evaluation": ("test",)}.get(split, ("train", "test"))
    return [f"liu2019/{LIU_SQUAD[p]}" for p in picked]


def comb_data_blocks(config: dict) -> list[dict]:
    """The combinational analysis' data blocks: its own and each variant's (``variants[i].data``),
    each once (a YAML anchor may make two the same object)."""
    comb = config.get("combinational") or {}
    blocks = [comb.get("data") or {}] + [v["data"] for v in comb.get("variants") or [] if v.get("data")]
    return list({id(b): b for b in blocks}.values())
