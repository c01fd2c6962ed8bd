"""The bad-input catalogue, issue 36 item 2 (bounds): deep or alias-bomb YAML and JSON, release pickles that
share one list 2^40 times or contain themselves, a tarball of many members, perturbation parameters out of
range. Each is one line (a BelugaError), under a time limit (a signal alarm) and a memory limit (the address
space capped with resource.setrlimit while the case runs)."""

from __future__ import annotations

import gzip
import tarfile

import pytest
from conftest import refused

BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f'{c}: &{c} [{",".join(["*" + p] * 9)}]\n' for p, c in zip("abcdefgh", "bcdefghi")))


SPEC = "spec_version: 1\nname: s\ntask: sent\n"


@pytest.mark.parametrize("kind", ["alias_bomb", "deep", "recursive"])
def test_spec_yaml_bounded(tmp_path, kind):
    body = {"alias_bomb": BOMB, "deep": "x: " + "[" * 100000 + "]" * 100000 + "\n", "recursive": "x: &a [*a]\n"}
    (tmp_path / "s.yaml").write_text(SPEC + body[kind])
    line = refused(tmp_path, "from beluga.suites.spec import load_spec", "load_spec('s.yaml')")
    assert "s.yaml" in line and {"alias_bomb": "aliases expand", "deep": "nested deeper than 100",
                                 "recursive": "refers to the node"}[kind] in line, line


def test_lexicon_file_alias_bomb(tmp_path):
    (tmp_path / "lex.yaml").write_text(BOMB)
    line = refused(tmp_path, "from beluga.suites.spec.reading import read_yaml",
                   "read_yaml('lex.yaml', 'lexicon file')")   # what spec lexicon_files are read with
    assert "lex.yaml" in line and "aliases expand" in line, line


def test_config_alias_bomb_and_deep(tmp_path):
    (tmp_path / "c.yaml").write_text(BOMB)
    line = refused(tmp_path, "import yaml\nfrom beluga.workflow.config import validate_config",
                   "validate_config(yaml.safe_load(open('c.yaml')), ['c.yaml'])")
    assert "config file c.yaml" in line and "aliases are expanded" in line, line
    (tmp_path / "d.yaml").write_text("x: " + "[" * 100000 + "]" * 100000 + "\n")
    line = refused(tmp_path, "from beluga.workflow.plan import load_config", "load_config('d.yaml')")
    assert "d.yaml" in line and "nested deeper" in line, line


DEEP_JSON = "[" * 100000 + "]" * 100000


@pytest.mark.parametrize("fmt", ["jsonl", "csv_cell", "meta"])
def test_suite_file_deep_json(tmp_path, fmt):
    import json
    row = {"case_id": "c1", "functionality": "f", "capability": "c", "test_type": "MFT", "inputs": ["a"],
           "labels": [1], "expect": "eq", "expect_params": "{}", "agg_fn": "all", "meta": None}
    if fmt == "jsonl":
        (tmp_path / "s.jsonl").write_text(json.dumps(row)[:-1] + ', "deep": ' + DEEP_JSON + "}\n")
        name = "s.jsonl"
    elif fmt == "meta":
        row["meta"] = DEEP_JSON
        (tmp_path / "s.jsonl").write_text(json.dumps(row) + "\n")
        name = "s.jsonl"
    else:
        (tmp_path / "s.csv").write_text("case_id,functionality,capability,test_type,inputs,labels,expect,agg_fn\n"
                                        f"c1,f,c,MFT,\"{DEEP_JSON}\",[1],eq,all\n")
        name = "s.csv"
    line = refused(tmp_path, "from beluga.suites.tabular import read_suite_table",
                   f"read_suite_table({name!r}, (0, 1))")
    assert name in line and "nested deeper than 100" in line, line


def test_fetch_lock_deep_json(tmp_path):
    (tmp_path / "fetch.lock.json").write_text(DEEP_JSON)
    line = refused(tmp_path, "from beluga.data import fetch\nimport pathlib\n"
                   "pathlib.Path(fetch.lock_path('.')).write_text(open('fetch.lock.json').read())",
                   "fetch.read_lock('.')")
    assert "nested deeper than 100" in line, line


# ---------------------------------------------------------------- release pickles and tarballs
PICKLE_SETUP = """
import pickle
from pathlib import Path
from beluga.suites.release import ReleaseTest, _test_records
from beluga.suites.release_pickle import unpickle_release
def test(data, labels=None, meta=None):
    expect = {"expression": "x", "name": "x", "params": {}, "slice": None}
    return ReleaseTest(0, "f", "MFT", "c", "d", data, labels, meta, "all", expect, None)
"""


def test_release_pickle_shared_2_40_refused(tmp_path):
    # 40 levels, each a list holding the one below twice: 2^40 leaves, a few hundred bytes of pickle
    setup = PICKLE_SETUP + """
x = ["leaf"]
for _ in range(40):
    x = [x, x]
data = pickle.dumps([x], protocol=3)
assert len(data) < 2000
obj = unpickle_release(data, Path("bomb.pkl"))
"""
    line = refused(tmp_path, setup, "list(_test_records('sentiment', test(obj), Path('bomb.pkl')))")
    assert "bomb.pkl" in line and "shared references" in line, line


def test_release_pickle_self_referencing_list(tmp_path):
    setup = PICKLE_SETUP + """
x = ["a"]
x.append(x)
obj = unpickle_release(pickle.dumps([["a"]], protocol=3), Path("self.pkl"))
meta = unpickle_release(pickle.dumps([x], protocol=3), Path("self.pkl"))
"""
    line = refused(tmp_path, setup, "list(_test_records('sentiment', test(obj, meta=meta), Path('self.pkl')))")
    assert "self.pkl" in line and "contains itself" in line, line


def test_release_expectation_closure_referring_to_itself(tmp_path):
    setup = """
from beluga.suites.release import describe_expectation
from beluga.suites.release_pickle import CellRecord, CodeRecord, FunctionRecord, MalformedPickle
code = CodeRecord(0, 0, 0, 0, 0, b"", (), ("Expect", "aggregate"), ("args", "kwargs"), "x/checklist/expect.py",
                  "wrapped", 1, b"", ("agg_fn", "expect_fn", "slice_fn"), ())
fn = FunctionRecord("wrapped", None, code, {}, None, ())
fn.closure_values.update(agg_fn="all", expect_fn=fn, slice_fn=fn)
"""
    line = refused(tmp_path, setup, "describe_expectation(fn)", error="MalformedPickle")
    assert "sliced" in line, line


def test_tarball_of_many_members_refused_fast(tmp_path):
    n = 200_000
    header = tarfile.TarInfo("e.pkl").tobuf(format=tarfile.GNU_FORMAT)
    with gzip.open(tmp_path / "many_suite.tar.gz", "wb", compresslevel=1) as f:
        for _ in range(n // 10_000):
            f.write(header * 10_000)
        f.write(b"\0" * 1024)
    line = refused(tmp_path, "from beluga.suites.release import read_release_records",
                   "read_release_records('many_suite.tar.gz')", seconds=1)
    assert "many_suite.tar.gz" in line and "expected exactly one member" in line and "more than one" in line, line


# ---------------------------------------------------------------- perturbation parameters
@pytest.mark.parametrize("param", ["n=1000000000", "length=100000000000"])
def test_perturb_parameters_bounded(tmp_path, param):
    key, value = param.split("=")
    line = refused(tmp_path, "from beluga.suites.perturb import check_params",
                   f"check_params('add_url', {{{key!r}: {value}}}, 'spec s.yaml')")
    assert f"parameter '{key}'" in line and "from 1 to" in line, line
    (tmp_path / "in.txt").write_text("A fine film.\n")
    line = refused(tmp_path, "from beluga.suites.authoring import perturb_command",
                   f"perturb_command('in.txt', 'add_url', 'INV', 'inv', 'o.parquet', params=[{param!r}])")
    assert f"parameter '{key}'" in line, line
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("member", ["", "./", ".pkl"])
def test_tarball_member_without_a_name(tmp_path, member):
    setup = f"""
import io, tarfile
info = tarfile.TarInfo({member!r})
info.size = 10
with tarfile.open("noname_suite.tar.gz", "w:gz") as tf:
    tf.addfile(info, io.BytesIO(b"x" * 10))
from beluga.suites.release import read_release_records
"""
    line = refused(tmp_path, setup, "read_release_records('noname_suite.tar.gz')")
    assert "noname_suite.tar.gz" in line and ("is not a .pkl file" in line or "not a readable" in line), line
