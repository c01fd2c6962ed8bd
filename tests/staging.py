"""A data folder staged for a paper configuration (issue 40's staged dry runs): every remote file the
configuration reads (:func:`beluga.data.fetch.config_files`) written as a tiny file in its official
shape, by the builders of tests/test_glue_data.py and tests/test_challenge_data.py. A path no builder
knows fails the test naming it, so a configuration that starts reading a new file cannot pass unstaged."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import yaml
from test_challenge_data import hans_files, jsonl, nli_record, sick_zip, squad_json, write_zip, yelp_archive
from test_glue_data import glue_zip

from beluga.data import remotes
from beluga.data.fetch import DEFAULT_REVISION, config_files, config_models, resolve_data_paths
from beluga.data.glue import GLUE_SPECS

NLI_LABELS = ("entailment", "neutral", "contradiction")
NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hal", "Ivy", "Jon", "Kim", "Lou"]


def _nli_lines(n: int, prefix: str) -> str:
    return jsonl(nli_record(i, NLI_LABELS[i % 3], pairID=f"{prefix}{i}") for i in range(n))


def _squad_articles(n_articles: int, prefix: str):
    """``n_articles`` articles of two passages with two questions each (answer 'Denver')."""
    return [(f"{prefix}Article{a}", [(f"Denver {prefix}{a}-{p} is a city.", [f"{prefix}{a}-{p}-{q}" for q in range(2)])
                                    for p in range(2)]) for a in range(n_articles)]


def _yelp_csv(n: int) -> str:
    return "".join(f'"{1 + i % 5}","Review {i} of {NAMES[i % 12]}, the food was fine."\n' for i in range(n))


def _scitail(path: Path, n: int) -> None:
    rows = "".join(f"Premise {i} .\tHypothesis {i} .\t{'entails' if i % 2 else 'neutral'}\n" for i in range(n))
    write_zip(path, {f"SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv": rows for s in ("train", "dev", "test")})


def _snli(path: Path, n: int) -> None:
    write_zip(path, {f"snli_1.0/snli_1.0_{s}.jsonl": _nli_lines(n, f"snli-{s}-") for s in ("train", "dev", "test")})


def _naik_archive(path: Path, n: int) -> None:
    write_zip(path, {f"Stress_Tests/{archive}": _nli_lines(n, f"{name}-")
                     for name, (archive, _train, _test) in remotes.NAIK_SETS.items() if archive})


def build(data_dir: Path, rel: str, n: int = 40) -> None:
    """Write the tiny official-shaped file of ``rel`` (a path in the data folder)."""
    path = data_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    glue = {v: k for k, v in remotes.IID_FILES.items()}
    if rel in glue:
        glue_zip(path.parent, glue[rel], n_train=n, n_dev=n)
        assert (path.parent / GLUE_SPECS[glue[rel]].archives[0]).name == path.name, rel
    elif rel.startswith("iid/squad/"):
        squad_json(path, _squad_articles(max(2, n // 8), "train" if "train" in rel else "dev"))
    elif rel.startswith("ood/naik/liu2019/"):
        path.write_text(_nli_lines(n, f"{path.stem}-"))
    elif rel == remotes.NAIK_ARCHIVE:
        _naik_archive(path, n)
    elif rel.startswith("ood/adversarial_squad/"):
        squad_json(path, _squad_articles(max(2, n // 8), re.sub(r"\W", "", path.stem)))
    elif rel.startswith("ood/hans/"):
        hans_files(path.parent, labels=("non-entailment", "entailment") * (n // 2))
    elif rel == "ood/sick/SICK.zip":
        sick_zip(path.parent, [(i, ["NEUTRAL", "ENTAILMENT", "CONTRADICTION"][i % 3], f"{1 + (i % 9) / 2:g}",
                                ["TRAIN", "TEST", "TRIAL"][i % 3]) for i in range(n)])
    elif rel == "ood/snli/snli_1.0.zip":
        _snli(path, n)
    elif rel == "ood/scitail/SciTailV1.1.zip":
        _scitail(path, n)
    elif rel == remotes.YELP_ARCHIVE:
        yelp_archive(path, _yelp_csv(n), _yelp_csv(max(5, n // 4)))
    else:
        raise AssertionError(f"tests/staging.py has no builder for {rel}: add one in its official shape")


def staged_config(config_file: Path, data_dir: Path, n: int = 40) -> dict:
    """Stage every remote file ``config_file`` reads under ``data_dir``; the config (data_dir set) back."""
    config = yaml.safe_load(Path(config_file).read_text())
    config["data_dir"] = str(data_dir)
    resolved = copy.deepcopy(config)
    resolve_data_paths(resolved)
    for remote in config_files(resolved):
        if not (data_dir / remote.path).exists():
            build(data_dir, remote.path, n)
    return config


def _model_config(name: str) -> dict:
    """A ``config.json`` of the size a hub name states (base / large; BERT's layout: a dry run reads the
    architecture's size and positions, never weights)."""
    large = "large" in name
    return {"model_type": "roberta" if "roberta" in name else "bert", "architectures": ["BertModel"],
            "hidden_size": 1024 if large else 768, "num_hidden_layers": 24 if large else 12,
            "num_attention_heads": 16 if large else 12, "intermediate_size": 4096 if large else 3072,
            "max_position_embeddings": 514 if "roberta" in name else 512, "vocab_size": 30522}


def stage_hub_models(config: dict, cache: Path) -> dict[str, str]:
    """A Hugging Face hub cache under ``cache`` holding a ``config.json`` snapshot of every hub model
    ``config`` names, at its ``model_revision`` (or ``main``): what ``snakemake fetch`` leaves for an
    offline dry run. The environment variables that point huggingface_hub at it back."""
    fake = "0" * 40
    for name, revision in config_models(config).values():
        repo = cache / f"models--{name.replace('/', '--')}"
        commit = revision if revision != DEFAULT_REVISION else fake
        if revision == DEFAULT_REVISION:
            (repo / "refs").mkdir(parents=True, exist_ok=True)
            (repo / "refs" / "main").write_text(fake)
        (repo / "snapshots" / commit).mkdir(parents=True, exist_ok=True)
        (repo / "snapshots" / commit / "config.json").write_text(json.dumps(_model_config(name)))
    return {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}


def dump(config: dict, path: Path) -> Path:
    path.write_text(json.dumps(config) if path.suffix == ".json" else yaml.safe_dump(config, sort_keys=False))
    return path
