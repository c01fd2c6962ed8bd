"""CheckList's published release tarballs (../shared/data/checklist/release/)
read without executing them (beluga/suites/release.py): parity with the JSONL
export record for record, field for field; read_any_suite / score / suite
export on a tarball; hostile pickles and tarballs refused with nothing run."""

import gzip
import io
import json
import os
import pickle
import subprocess
import sys
import tarfile
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from beluga.cli import main
from beluga.core.errors import SuiteError
from beluga.core.tasks import SUITE_TASK_TYPES, get_task_type
from beluga.score.outcomes import score_cases
from beluga.suites.checklist import import_checklist, import_checklist_records, read_any_suite
from beluga.suites.release import (
    RECORD_FIELDS,
    describe_expectation,
    is_release_suite,
    load_release_suite,
    read_release_records,
    write_checklist_jsonl,
)
from beluga.suites.release_pickle import ALLOWED_GLOBALS

SHARED = REPO.parent / "shared" / "data"  # ../shared/data beside the checkout (as tests/test_bad_inputs.py)
CHECKLIST = SHARED / "checklist"
RELEASE = CHECKLIST / "release"
SUITES = ("sentiment", "qqp", "squad")
N_CASES = {"sentiment": 86420, "qqp": 63216, "squad": 13311}


def tarball(suite: str) -> Path:
    return RELEASE / f"{suite}_suite.tar.gz"


@pytest.fixture(scope="module")
def release_dir() -> Path:
    if not all(tarball(s).is_file() for s in SUITES):
        pytest.skip(f"CheckList release tarballs not found at {RELEASE} (../shared/data/checklist/release beside "
                    "the checkout)")
    return RELEASE


@pytest.fixture(scope="module")
def parsed(release_dir):
    """Each tarball's records, parsed once per session."""
    cache: dict[str, list[dict]] = {}

    def get(suite: str) -> list[dict]:
        if suite not in cache:
            t = time.time()
            cache[suite] = list(read_release_records(tarball(suite)))
            print(f"read {suite} release tarball: {len(cache[suite])} records in {time.time() - t:.2f} s")
        return cache[suite]
    return get


@pytest.fixture(scope="module")
def exported(release_dir):
    """The shared JSONL export's lines (text) and records, read once."""
    cache: dict[str, tuple[list[str], list[dict]]] = {}

    def get(suite: str):
        if suite not in cache:
            with gzip.open(CHECKLIST / f"{suite}.jsonl.gz", "rt", encoding="utf-8") as f:
                lines = f.read().splitlines()
            cache[suite] = (lines, [json.loads(x) for x in lines])
        return cache[suite]
    return get


@pytest.fixture(scope="module")
def jsonl_frames(release_dir):
    """read_any_suite of the shared JSONL export, once per (suite, paper_fixes)."""
    cache: dict[tuple[str, bool], pd.DataFrame] = {}

    def get(suite: str, paper_fixes: bool = True) -> pd.DataFrame:
        if (suite, paper_fixes) not in cache:
            cache[suite, paper_fixes] = read_any_suite(CHECKLIST / f"{suite}.jsonl.gz", paper_fixes=paper_fixes)
        return cache[suite, paper_fixes]
    return get


# ---------------------------------------------------------------- parity with the JSONL export
@pytest.mark.slow  # the real release tarballs read whole (~5 s a suite)
@pytest.mark.parametrize("suite", SUITES)
def test_records_equal_jsonl_export(parsed, exported, suite):
    recs = parsed(suite)
    _, ref = exported(suite)
    assert len(recs) == len(ref) == N_CASES[suite]
    for r, d in zip(recs, ref):
        assert tuple(r) == tuple(d) == RECORD_FIELDS, r["case_id"]  # exactly the export's fields, in its order
        if r != d:
            diff = {k: (r[k], d[k]) for k in d if r[k] != d[k]}
            pytest.fail(f"{d['case_id']}: fields differ: {str(diff)[:500]}")
    # and the lines the writer produces (write_checklist_jsonl) are the export's, byte for byte
    lines, _ = exported(suite)
    assert [json.dumps(r, ensure_ascii=False) for r in recs] == lines


@pytest.mark.slow  # the real release tarballs read whole (~5 s a suite)
def test_expectations_and_aggregation_recovered(parsed):
    """agg_fn and the expectation parameters (closure cells) per test, as the
    per-test summary of the export (``{suite}_tests.json``) lists them."""
    for suite in SUITES:
        tests = json.loads((CHECKLIST / f"{suite}_tests.json").read_text())
        recs = parsed(suite)
        first = {}
        for r in recs:
            first.setdefault(r["test_index"], r)
        assert len(first) == len(tests)
        for t in tests:
            r = first[t["test_index"]]
            assert (r["functionality"], r["test_type"], r["agg_fn"], r["expect"]) == \
                   (t["functionality"], t["test_type"], t["agg_fn"], t["expect"]), t["functionality"]
    sent = {r["functionality"]: r for r in parsed("sentiment")}
    assert sent["intensifiers"]["expect"]["params"] == {"label": None, "increasing": True, "tolerance": 0.1}
    assert sent["reducers"]["expect"]["params"]["increasing"] is False
    qqp = {r["functionality"]: r for r in parsed("qqp")}
    assert qqp["(q, paraphrase(q))"]["test_type"] == "DIR" and qqp["(q, paraphrase(q))"]["agg_fn"] == "all"
    assert qqp["Change first name in one of the questions"]["expect"]["slice"]["kind"] == "Expect.slice_orig"


@pytest.mark.slow  # the real release tarballs read whole (~5 s a suite)
@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("paper_fixes", [True, False])
def test_read_any_suite_tarball_equals_jsonl(parsed, jsonl_frames, monkeypatch, suite, paper_fixes):
    """read_any_suite(tarball) == read_any_suite(JSONL export). The tarball is
    parsed once per session (``parsed``); read_any_suite's own path (dispatch by
    extension, import of the records) runs as is. score (below) reads the
    tarballs end to end."""
    import beluga.suites.release as release

    records, target = parsed(suite), tarball(suite)

    def cached(path, suite=None):
        assert Path(path) == target
        return iter(records)
    monkeypatch.setattr(release, "read_release_records", cached)
    t = time.time()
    a = read_any_suite(tarball(suite), paper_fixes=paper_fixes)
    print(f"read_any_suite {suite} tarball records (paper_fixes={paper_fixes}): {time.time() - t:.2f} s")
    b = jsonl_frames(suite, paper_fixes)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs and a.attrs["declared"] and a.attrs["checklist_suite"] == suite


@pytest.mark.slow  # the real release tarballs read whole (~5 s a suite)
def test_release_record_errors_name_the_case_id(parsed):
    rec = dict(parsed("qqp")[0], agg_fn="any")
    with pytest.raises(SuiteError) as e:
        import_checklist_records([(None, rec)], tarball("qqp"))
    assert str(e.value) == (f"CheckList suite {tarball('qqp')}: case_id='qqp-00-00000': field 'agg_fn': "
                            "unknown aggregation 'any'")


# ---------------------------------------------------------------- score and suite export on a tarball
def _subset_predictions(df: pd.DataFrame, qa: bool, per_functionality: int = 25) -> pd.DataFrame:
    """Seeded predictions for the first cases of every functionality."""
    sel = df.groupby("functionality", sort=False).head(per_functionality)
    rng = np.random.default_rng(0)
    cid, idx, vals = [], [], []
    for r in sel.itertuples(index=False):
        for j in range(len(r.inputs)):
            cid.append(r.case_id)
            idx.append(j)
            if qa:
                vals.append(str(r.answers[j]) if r.answers is not None and rng.uniform() < 0.7 else "nobody")
            else:
                p = rng.dirichlet(np.ones(3 if df.attrs["checklist_suite"] == "sentiment" else 2))
                vals.append(p.astype("float32"))
    col = "answer" if qa else "probs"
    return pd.DataFrame({"case_id": cid, "input_idx": np.asarray(idx, dtype="int32"), col: vals})


@pytest.mark.slow  # the real release tarballs read whole (~5 s a suite)
@pytest.mark.parametrize("suite", SUITES)
def test_score_tarball_equals_jsonl(jsonl_frames, tmp_path, suite):
    """``score --suite <tarball>`` gives the outcomes scoring gives on the JSONL export."""
    ref = jsonl_frames(suite)
    ttype = get_task_type(SUITE_TASK_TYPES[suite])
    preds = _subset_predictions(ref, qa=suite == "squad")
    preds.to_parquet(tmp_path / "preds.parquet")
    t = time.time()
    assert main(["score", "--suite", str(tarball(suite)), "--predictions", str(tmp_path / "preds.parquet"),
                 "--out", str(tmp_path / "o")]) == 0
    print(f"score {suite} tarball: {time.time() - t:.2f} s")
    cases = pd.read_parquet(tmp_path / "o" / "cases.parquet")
    expected = score_cases(ref[ref.case_id.isin(set(preds.case_id))].reset_index(drop=True), preds, ttype,
                           reasons=True)
    pd.testing.assert_frame_equal(cases[["case_id", "functionality", "status"]],
                                  expected[["case_id", "functionality", "status"]])
    def as_list(col):
        return [x if isinstance(x, str) else None for x in col]
    assert as_list(cases["filter_reason"]) == as_list(expected["filter_reason"])
    assert expected["filter_reason"].isna().tolist() == (expected["status"] != "filtered").tolist()
    assert {"pass", "fail"} <= set(cases.status)
    funcs = pd.read_csv(tmp_path / "o" / "functionalities.csv")
    g = expected.groupby("functionality", sort=False)["status"]
    assert funcs.functionality.tolist() == list(dict.fromkeys(ref.functionality))
    assert funcs.n_cases.tolist() == g.size().tolist()
    assert funcs.n_failed.tolist() == g.agg(lambda x: int((x == "fail").sum())).tolist()
    assert funcs.n_scored.tolist() == g.agg(lambda x: int((x != "filtered").sum())).tolist()


@pytest.mark.slow
def test_score_tarball_command_line(jsonl_frames, tmp_path):
    """``python -m beluga score --suite <tarball>`` as a process."""
    _subset_predictions(jsonl_frames("squad"), qa=True, per_functionality=5).to_parquet(tmp_path / "p.parquet")
    res = subprocess.run([sys.executable, "-m", "beluga", "score", "--suite", str(tarball("squad")),
                          "--predictions", str(tmp_path / "p.parquet"), "--out", str(tmp_path / "o")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "(read, " in res.stdout   # the summary names the task the suite was read as
    funcs = pd.read_csv(tmp_path / "o" / "functionalities.csv")
    assert len(funcs) == 24 and funcs.n_cases.sum() == 5 * 24


@pytest.mark.slow  # the real release tarballs read whole (~5 s a suite)
@pytest.mark.parametrize("suite", ["squad"])  # every suite's lines, as the writer writes them: test_records_equal_...
def test_suite_export_checklist_equals_shared_jsonl(exported, tmp_path, suite):
    out = tmp_path / f"{suite}.jsonl.gz"
    t = time.time()
    assert main(["suite", "export", "--suite", str(tarball(suite)), "--out", str(out), "--format", "checklist"]) == 0
    print(f"suite export {suite} --format checklist: {time.time() - t:.2f} s")
    lines, ref = exported(suite)
    with gzip.open(out, "rt", encoding="utf-8") as f:
        mine = f.read().splitlines()
    assert [json.loads(x) for x in mine] == ref
    assert mine == lines  # byte-identical lines
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.slow
def test_suite_export_command_line_and_refusals(exported, tmp_path, capsys):
    res = subprocess.run([sys.executable, "-m", "beluga", "suite", "export", "--help"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert "--format checklist" in " ".join(res.stdout.split())
    # plain (uncompressed) JSONL
    out = tmp_path / "squad.jsonl"
    assert main(["suite", "export", "--suite", str(tarball("squad")), "--out", str(out), "--format",
                 "checklist"]) == 0
    assert "13311 CheckList test cases (squad suite)" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8").splitlines() == exported("squad")[0]
    # a JSONL export passes through unchanged
    again = tmp_path / "again.jsonl"
    assert main(["suite", "export", "--suite", str(out), "--out", str(again), "--format", "checklist"]) == 0
    assert again.read_bytes() == out.read_bytes()
    # never onto the input itself (a link to the tarball is the same file)
    link = tmp_path / "link.tar.gz"
    link.symlink_to(tarball("squad"))
    assert main(["suite", "export", "--suite", str(link), "--out", str(link), "--format", "checklist"]) == 2
    err = capsys.readouterr().err
    assert "is the input suite file itself" in err and err.count("\n") == 1
    assert main(["suite", "export", "--suite", str(out), "--out", str(out), "--format", "checklist"]) == 2
    assert sum(1 for _ in open(out, encoding="utf-8")) == 13311
    # a project-format suite is read as any suite is (issue 41: exported, tests/test_suite_travel.py), so a
    # malformed one stops with the reader's line
    (tmp_path / "s.csv").write_text("case_id\n")
    assert main(["suite", "export", "--suite", str(tmp_path / "s.csv"), "--out", str(tmp_path / "x.jsonl"),
                 "--format", "checklist"]) == 2
    assert "field 'case_id': the suite has no test cases" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()
    # the inputs export of a tarball still works
    assert main(["suite", "export", "--suite", str(tarball("squad")), "--out", str(tmp_path / "in.jsonl")]) == 0
    rows = pd.read_json(tmp_path / "in.jsonl", lines=True)
    assert list(rows.columns) == ["case_id", "input_idx", "context", "question"]


def test_is_release_suite_and_api(release_dir, tmp_path):
    assert is_release_suite(tarball("sentiment"))
    assert not is_release_suite(CHECKLIST / "sentiment.jsonl.gz") and not is_release_suite(tmp_path / "no.tar.gz")
    (tmp_path / "fake.tar.gz").write_text("not gzip")
    assert not is_release_suite(tmp_path / "fake.tar.gz")
    # the .pkl itself (read into memory from the tarball here, written to tmp): suite name from the file name
    with tarfile.open(tarball("sentiment")) as tf:
        m = tf.getmembers()[0]
        (tmp_path / m.name).write_bytes(tf.extractfile(m).read())
    assert m.name == "sentiment_suite.pkl" and is_release_suite(tmp_path / m.name)
    suite = load_release_suite(tmp_path / m.name)
    assert suite.suite == "sentiment" and len(suite.tests) == 38
    # stand-ins only: the expectation of a test is a record, recognised by its code
    t = suite.raw.state["tests"]["intensifiers"]
    assert type(t).__name__ == "DIRRecord" and type(t.state["expect"]).__name__ == "FunctionRecord"
    assert describe_expectation(t.state["expect"])["slice"]["kind"] == "Expect.slice_pairwise"
    # without a telling name the content decides (string inputs: sentiment)
    (tmp_path / m.name).rename(tmp_path / "x.pkl")
    df = import_checklist(tmp_path / "x.pkl")
    assert len(df) == 86420 and df.attrs["checklist_suite"] == "sentiment"
    assert write_checklist_jsonl([], tmp_path / "empty.jsonl.gz") == 0
    assert gzip.open(tmp_path / "empty.jsonl.gz").read() == b""


# ---------------------------------------------------------------- hostile pickles and tarballs
class _Pwn:
    def __init__(self, func, arg):
        self.func, self.arg = func, arg

    def __reduce__(self):
        return (self.func, (self.arg,))


def _tar_with(tmp_path: Path, name: str, data: bytes, tar_name: str = "evil.tar.gz") -> Path:
    p = tmp_path / tar_name
    with tarfile.open(p, "w:gz") as tf:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return p


def _refused(path: Path, *needles: str) -> str:
    with pytest.raises(SuiteError) as e:
        read_release_records(path)
    text = str(e.value)
    assert "\n" not in text and str(path) in text, text
    for n in needles:
        assert n in text, text
    return text


def test_os_system_pickle_refused_nothing_runs(tmp_path):
    pwned = tmp_path / "pwned"
    data = pickle.dumps(_Pwn(os.system, f"touch {pwned}"), protocol=3)
    (tmp_path / "evil.pkl").write_bytes(data)
    mod = os.system.__module__  # posix on Linux
    _refused(tmp_path / "evil.pkl", f"refused {mod}.system", "nothing was executed")
    tar = _tar_with(tmp_path, "evil_suite.pkl", data)
    _refused(tar, f"refused {mod}.system")
    with pytest.raises(SuiteError, match="refused"):
        read_any_suite(tar)
    assert main(["suite", "export", "--suite", str(tar), "--out", str(tmp_path / "o.jsonl"), "--format",
                 "checklist"]) == 2
    assert main(["score", "--suite", str(tar), "--predictions", str(tmp_path / "p.parquet"),
                 "--out", str(tmp_path / "o")]) == 2
    # protocol 4/5 (STACK_GLOBAL), subprocess.Popen, builtins.eval / exec
    for proto in (4, 5):
        (tmp_path / "p.pkl").write_bytes(pickle.dumps(_Pwn(os.system, f"touch {pwned}"), protocol=proto))
        _refused(tmp_path / "p.pkl", f"{mod}.system")
    (tmp_path / "p.pkl").write_bytes(pickle.dumps(_Pwn(subprocess.Popen, ["touch", str(pwned)])))
    _refused(tmp_path / "p.pkl", "subprocess.Popen")
    (tmp_path / "p.pkl").write_bytes(pickle.dumps(_Pwn(eval, f"open({str(pwned)!r}, 'w')")))
    _refused(tmp_path / "p.pkl", "builtins.eval")
    (tmp_path / "p.pkl").write_bytes(pickle.dumps(_Pwn(exec, f"open({str(pwned)!r}, 'w')")))
    _refused(tmp_path / "p.pkl", "builtins.exec")
    assert not pwned.exists()
    assert ("builtins", "eval") not in ALLOWED_GLOBALS and len(ALLOWED_GLOBALS) == 16


def _s(text: str) -> bytes:
    b = text.encode()
    return b"X" + len(b).to_bytes(4, "little") + b


def test_dill_helpers_cannot_reach_other_modules(tmp_path):
    """The allowed dill helpers only build records of allow-listed names:
    ``_get_attr(_import_module('os'), 'system')('touch ...')`` is refused, and
    so are calls of references the reader never calls."""
    pwned = tmp_path / "pwned"
    g, imp, load_type = b"cdill._dill\n_get_attr\n", b"cdill._dill\n_import_module\n", b"cdill._dill\n_load_type\n"
    cases = {
        "os": g + imp + _s("os") + b"\x85R" + _s("system") + b"\x86R" + _s(f"touch {pwned}") + b"\x85R.",
        "builtins.eval": g + _s("builtins") + _s("eval") + b"\x86R" + _s(f"open({str(pwned)!r}, 'w')") + b"\x85R.",
        "builtins.len": g + _s("builtins") + _s("len") + b"\x86R" + _s("abc") + b"\x85R.",
        "types.FunctionType": load_type + _s("FunctionType") + b"\x85R.",
        "types.zip": load_type + _s("zip") + b"\x85R" + _s("ab") + b"\x85R.",
        "checklist.expect.Expect": b"cchecklist.expect\nExpect\n)R.",
    }
    for what, body in cases.items():
        (tmp_path / "d.pkl").write_bytes(b"\x80\x03" + body)
        _refused(tmp_path / "d.pkl", f"refused {what}")
    assert not pwned.exists()
    # the shared stand-ins take no state: BUILD cannot re-point them (e.g. numpy.ndarray -> os)
    state = b"N}" + _s("module") + _s("os") + b"s\x86b."
    for glob in (b"cnumpy\nndarray\n", g):
        (tmp_path / "b.pkl").write_bytes(b"\x80\x03" + glob + state)
        _refused(tmp_path / "b.pkl", "takes no state")
    assert ALLOWED_GLOBALS["numpy", "ndarray"].module == "numpy"


def test_refusal_names_the_test(tmp_path, monkeypatch):
    """A hostile expectation inside a suite-shaped pickle: the error names the
    test (functionality) it sits in."""
    pwned = tmp_path / "pwned"
    suite_mod = types.ModuleType("checklist.test_suite")
    types_mod = types.ModuleType("checklist.test_types")

    class TestSuite:
        pass

    class MFT:
        pass

    TestSuite.__module__, TestSuite.__qualname__ = "checklist.test_suite", "TestSuite"
    MFT.__module__, MFT.__qualname__ = "checklist.test_types", "MFT"
    suite_mod.TestSuite, types_mod.MFT = TestSuite, MFT
    monkeypatch.setitem(sys.modules, "checklist", types.ModuleType("checklist"))
    monkeypatch.setitem(sys.modules, "checklist.test_suite", suite_mod)
    monkeypatch.setitem(sys.modules, "checklist.test_types", types_mod)
    fine, evil = MFT(), MFT()
    fine.__dict__.update(data=["good"], labels=2, agg_fn="all", expect=None)
    evil.__dict__.update(data=["bad"], labels=0, agg_fn="all", expect=_Pwn(os.system, f"touch {pwned}"))
    s = TestSuite()
    s.tests = {"fine test": fine, "evil test": evil}
    data = pickle.dumps(s, protocol=3)
    tar = _tar_with(tmp_path, "sentiment_suite.pkl", data)
    _refused(tar, "(test 'evil test')", f"{os.system.__module__}.system")
    assert not pwned.exists()


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "dir", "absolute", "dotdot", "two", "not_pkl", "empty"])
def test_bad_tar_members_refused(tmp_path, kind):
    data = pickle.dumps({"x": 1}, protocol=3)
    p = tmp_path / "t.tar.gz"
    with tarfile.open(p, "w:gz") as tf:
        if kind in ("symlink", "hardlink"):
            info = tarfile.TarInfo("sentiment_suite.pkl")
            info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
            info.linkname = "/etc/passwd"
            tf.addfile(info)
        elif kind == "dir":
            info = tarfile.TarInfo("sentiment_suite.pkl")
            info.type = tarfile.DIRTYPE
            tf.addfile(info)
        elif kind != "empty":
            names = {"absolute": ["/tmp/sentiment_suite.pkl"], "dotdot": ["../sentiment_suite.pkl"],
                     "two": ["a_suite.pkl", "b_suite.pkl"], "not_pkl": ["sentiment_suite.txt"]}[kind]
            for name in names:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    needle = {"symlink": "symbolic link", "hardlink": "hard link", "dir": "directory", "absolute": "absolute",
              "dotdot": "'..'", "two": "exactly one member", "not_pkl": "not a .pkl", "empty": "exactly one"}[kind]
    before = sorted(os.listdir(tmp_path))
    _refused(p, "field 'tar'", needle)
    assert sorted(os.listdir(tmp_path)) == before  # nothing extracted


def test_not_a_suite_and_broken_files(tmp_path):
    (tmp_path / "a.pkl").write_bytes(pickle.dumps({"tests": 1}, protocol=3))
    _refused(tmp_path / "a.pkl", "not a checklist TestSuite")
    (tmp_path / "b.pkl").write_bytes(b"\x80\x03garbage")
    _refused(tmp_path / "b.pkl", "not a readable CheckList suite pickle")
    (tmp_path / "c.tar.gz").write_bytes(b"\x1f\x8bnot really")
    _refused(tmp_path / "c.tar.gz", "not a readable tar archive")
    with pytest.raises(SuiteError, match="does not exist"):
        read_any_suite(tmp_path / "missing.tar.gz")
