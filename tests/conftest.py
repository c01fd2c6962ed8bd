"""Helpers shared by the test modules (no test module imports another)."""

import contextlib
import copy
import functools
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402


def case(cid, func, cap, ttype, inputs, labels=None, expect="eq", params=None, agg=None):
    return {"case_id": cid, "functionality": func, "capability": cap, "test_type": ttype,
            "inputs": list(inputs), "inputs_b": None, "labels": labels, "expect": expect,
            "expect_params": json.dumps(params or {}), "agg_fn": agg or ("all" if ttype == "MFT" else
                                                                         "all_except_first"),
            "meta": None}


def make_tiny_suite(n_per_func: int = 8) -> pd.DataFrame:
    rows = []
    for i in range(n_per_func):
        rows.append(case(f"mft-{i}", "neg words", "Vocabulary", "MFT", [f"this is awful {i}"], [0]))
        rows.append(case(f"inv-{i}", "typos", "Robustness", "INV",
                         [f"a fine film {i}", f"a fnie film {i}", f"a fine flim {i}"], expect="inv",
                         params={"tolerance": 0.1}))
        rows.append(case(f"dir-{i}", "add positive", "Vocabulary", "DIR",
                         [f"the plot {i}", f"the plot {i}. I loved it."], expect="diff_up",
                         params={"tolerance": 0.1}))
        rows.append(case(f"nn-{i}", "not negative", "Negation", "MFT", [f"not bad at all {i}"],
                         expect="not_negative"))
    return pd.DataFrame(rows)


def score_argv(suite_file, tmp_path: Path, out: Path) -> list[str]:
    """``python -m beluga score`` arguments for the tiny suite (``make_tiny_suite(2)`` saved at
    ``suite_file``), with constant predictions written into ``tmp_path``, scoring into ``out``."""
    suite = make_tiny_suite(2)
    rows = [(r.case_id, j, [0.2, 0.8]) for r in suite.itertuples(index=False) for j in range(len(r.inputs))]
    preds = tmp_path / "preds.parquet"
    pd.DataFrame(rows, columns=["case_id", "input_idx", "probs"]).to_parquet(preds)
    return ["score", "--suite", str(suite_file), "--predictions", str(preds), "--out", str(out), "--task", "sent"]


@pytest.fixture(autouse=True)
def _no_process_in_the_fast_loop(request, monkeypatch):
    """``pytest -m "not slow"`` is the inner loop: a test that starts a process (snakemake, the command
    line, a worker) is marked slow, or fails here saying so. Let through: ``git`` (the provenance record,
    beluga/core/provenance.py, asks it for the commit once per process, in milliseconds) and what Snakemake's
    plugins ask the machine when they are first imported in a process (tests/inproc.py: the Slurm plugin's
    ``which sacct``)."""
    if request.node.get_closest_marker("slow") is not None:
        return
    popen_init = subprocess.Popen.__init__

    def refuse(self, args, *a, **k):
        first = (args.split()[:1] or [""])[0] if isinstance(args, str) else (args[0] if args else "")
        if first == "git" or getattr(sys.modules.get("inproc"), "LOADING_PLUGINS", False):
            return popen_init(self, args, *a, **k)
        raise AssertionError(f"{request.node.nodeid} starts a process ({args!r}): mark it slow "
                             "(@pytest.mark.slow), or test the function the process would call")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.fixture
def tiny_suite():
    return make_tiny_suite()


# ---------------------------------------------------------------- training through the one loop
@functools.cache
def schema_settings() -> tuple:
    """The config-sourced FoldRun settings of a minimal config with the
    schema's defaults filled (the schema is their only source)."""
    from snakemake.utils import validate

    from beluga.train.settings import sourced_settings

    cfg = {"tasks": {"t": {"type": "sent", "model": "default", "suite": {"generate": "sent_default"},
                           "iid": {"source": "rotten_tomatoes"}}},
           "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen"]}
    validate(cfg, str(REPO / "schemas" / "config.schema.yaml"))
    return tuple(sourced_settings(cfg, cfg["training"]).items())


def fold_run(method: str = "vanilla", hparams: dict | None = None, seed: int = 0, **settings):
    """A FoldRun (beluga/train/settings.py) for a unit test: the schema's defaults,
    the method's complete hyper-parameters with ``hparams`` on top, plain
    fp32, one thread, no checkpoints; ``settings`` replace any other field."""
    from beluga.methods import get_algorithm
    from beluga.train.settings import FoldRun

    run = dict(schema_settings())
    run.update(task="test", task_type="sent", configuration="iid_to_t", method=method, partition="seen", fold="all",
               held_out=(), functionalities=(), model="tiny-random", start_label="tiny-random",
               hparams={**get_algorithm(method).hparam_defaults(), **(hparams or {})}, checkpoint_dir=None,
               seed=seed, sample_seed=seed, precision="fp32", threads=1, checkpoint_every_s=0.0)
    run.update(settings)
    return FoldRun(**run)


def train_run(model, tokenizer, streams, method: str, hparams: dict, seed: int = 0, reference_state=None,
              **settings) -> dict:
    """beluga.train.loop.train with the run built by :func:`fold_run`, its
    precision resolved on the model's device (as a job resolves it)."""
    from beluga.model.precision import resolve
    from beluga.train.loop import train

    run = fold_run(method, hparams, seed, **settings)
    return train(model, tokenizer, streams, run, precision=resolve(run.precision, next(model.parameters()).device),
                 reference_state=reference_state)


# ---------------------------------------------------------------- snakemake on test configs
REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
CONFIGS = REPO / "tests" / "configs"
TINY = CONFIGS / "tiny.yaml"
ENV = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO), TOKENIZERS_PARALLELISM="false")


def smk(workdir, *args, check=True, configfiles=(TINY,)):
    """snakemake as a process on config files (default: the tiny config), for the plumbing; a failure shows its
    output. The rules it ran are recorded (:func:`record_rules`)."""
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args,
           "--configfile", *map(str, configfiles)]
    out = record_rules(subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=1500))
    if check and out.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-6000:]}")
    return out


# ---------------------------------------------------------------- every rule under Snakemake, once at least
#: the folder where this session's snakemake processes record the rules they ran (set by the controller at
#: pytest_configure, inherited by the xdist workers)
RULES_RAN_ENV = "BELUGA_TEST_RULES_RAN"
FINISHED = re.compile(r"Finished jobid: \d+ \(Rule: (\w+)\)")


def rules_ran(text: str) -> set[str]:
    """The rules whose jobs a snakemake process finished, from what it printed."""
    return set(FINISHED.findall(text))


def record_rules(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """Record the rules a snakemake process ran (every snakemake process of the suite goes through here: the
    session's last check, :func:`missing_rules`, needs each rule of the workflow run at least once)."""
    folder = os.environ.get(RULES_RAN_ENV)
    ran = rules_ran((out.stdout or "") + (out.stderr or ""))
    if folder and ran:
        Path(folder, f"{os.getpid()}-{time.monotonic_ns()}.txt").write_text("\n".join(sorted(ran)))
    return out


def workflow_rules() -> set[str]:
    """Every rule of the workflow, as ``snakemake --list-rules`` lists them."""
    out = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(REPO), "--list-rules"],
                         capture_output=True, text=True, env=ENV, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return {ln.strip() for ln in out.stdout.splitlines() if ln.strip()}


def missing_rules(folder: Path, rules: set[str]) -> list[str]:
    """The rules of ``rules`` no snakemake process of the session ran (the records in ``folder``)."""
    ran = set()
    for f in Path(folder).glob("*.txt"):
        ran |= set(f.read_text().split())
    return sorted(rules - ran)


#: the folder of the session's plan calibrations (beluga/workflow/calibrate.py), never the user's cache
CACHE_ENV = "BELUGA_CACHE_DIR"


def pytest_configure(config):
    import tempfile

    if not hasattr(config, "workerinput") and RULES_RAN_ENV not in os.environ:   # the controller (or -n 0)
        os.environ[RULES_RAN_ENV] = tempfile.mkdtemp(prefix="beluga-rules-ran-")
    if not hasattr(config, "workerinput"):   # the workers and every process the tests start inherit it
        os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="beluga-calibrations-")


def whole_suite(session) -> bool:
    """Whether the session ran every test of the suite (no selection by mark, keyword, file or last failure)."""
    opt = session.config.option
    tests = Path(__file__).resolve().parent
    args = [Path(str(a).split("::")[0]).resolve() for a in session.config.args]
    return (not opt.markexpr and not opt.keyword and not getattr(opt, "lf", False) and not opt.deselect
            and not getattr(opt, "exitfirst", False) and bool(args) and all(a == tests for a in args))


def pytest_sessionfinish(session, exitstatus):
    """The suite's last check, on the controller: when the whole suite ran and passed, every rule of the
    workflow ran under Snakemake (as a process) at least once, or the session fails naming the ones that
    did not (the real runs: tests/test_rules_run.py)."""
    folder = os.environ.get(RULES_RAN_ENV)
    if hasattr(session.config, "workerinput") or not folder or exitstatus != 0 or not whole_suite(session):
        return
    missing = missing_rules(Path(folder), workflow_rules())
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if missing:
        line = (f"every rule under Snakemake: {len(missing)} rule(s) never ran in a snakemake process of the "
                f"suite: {', '.join(missing)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        line = "every rule under Snakemake: each rule of the workflow ran in a snakemake process of the suite"
    if reporter is not None:
        reporter.write_line(line, red=bool(missing), green=not missing)


def shared_run(tmp_path_factory, worker_id, name: str, start) -> Path:
    """A real end-to-end run (snakemake as a process) shared by the session's workers: the first to need it
    runs ``start(wd)`` under a file lock in the session's common temporary folder, the others wait for it and
    read it; a test that changes a run works on a copy (:func:`copy_run`). A worker that failed before leaves
    no half run."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent   # no xdist (-n 0): the session's own folder
    wd, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(wd, ignore_errors=True)
            start(wd)
            done.touch()
    return wd


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, worker_id) -> Path:
    """The tiny config's default target, run once per test session (:func:`shared_run`) and shared by the
    modules that read it (tests/test_workflow.py, test_workflow_seeds.py, test_slurm.py, test_provenance.py)."""
    return shared_run(tmp_path_factory, worker_id, "tiny_run", lambda wd: smk(wd, "--cores", "2"))


def copy_run(src: Path, dst: Path) -> Path:
    """A finished run's working folder copied with its files' times (snakemake sees it finished)."""
    shutil.copytree(src, dst, symlinks=True)
    return dst


def job_counts(text: str) -> dict[str, int]:
    """Job counts per rule from snakemake's job stats table."""
    counts = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("total", "job") and parts[0][-1] != ":":
            counts[parts[0]] = int(parts[1])
    return counts


def pipeline(workdir, *args, check=True, configfiles=(TINY,)) -> subprocess.CompletedProcess:
    """snakemake on config files (default: the tiny config) in this process (tests/inproc.py): Snakemake's own
    DAG, params and plumbing, every job's own script run in this process, one at a time; the same files at the
    same paths as :func:`smk`. For the tests of *what* a run computes; :func:`smk` (a process) for the plumbing."""
    from inproc import snakemake

    return snakemake(workdir, *args, configfiles=configfiles, check=check)


def planned_jobs(workdir, configfiles=(TINY,), targets=()) -> dict[str, int]:
    """Job counts per rule of a dry run (of the default target, or ``targets``), in this process."""
    out = pipeline(workdir, "-n", *targets, "--quiet", "rules", configfiles=configfiles)
    return job_counts(out.stdout + out.stderr)


# ---------------------------------------------------------------- snakemake on a config written from a dict
#: a tiny SENT config (the bad-input catalogue and the declared-input tests change keys of it)
BASE = {
    "seed": 3,
    "tasks": {"sent": {
        "type": "sent", "model": "tiny-random",
        "suite": {"generate": "sent_default", "cases_per_functionality": 4, "max_perturbations": 2, "seed": 7,
                  "functionalities": ["simple negations: negative", "typos", "add positive phrases"]},
        "iid": {"source": "rotten_tomatoes", "n_train": 40, "n_val": 10, "n_test": 20},
    }},
    "configurations": ["iid_to_t"],
    "methods": ["vanilla"],
    "partitions": ["seen"],
    "training": {"max_length": 32, "iid": {"lr": 1.0e-3, "batch_size": 8, "epochs": 1},
                 "suite": {"lr": 1.0e-3, "batch_size": 4, "epochs": 1}, "iid_in_mix": 16},
    "predict": {"batch_size": 32},
}
# real runs: no retry (the workflow profile retries a failed job once, which
# would print the same line twice and take twice as long)
RUN = ("--cores", "1", "--retries", "0")


def config_with(**changes) -> dict:
    """BASE with nested keys set (``training__iid__lr=0``); a value of ... deletes the key."""
    cfg = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = cfg
        for k in parents:
            node = node.setdefault(k, {})
        if value is ...:
            node.pop(last, None)
        else:
            node[last] = value
    return cfg


def write_config(workdir: Path, cfg: dict) -> Path:
    """``cfg`` written next to ``workdir`` (created) as its config file."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg_file = workdir.parent / f"{workdir.name}.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return cfg_file


def smk_config(workdir: Path, cfg: dict, *args) -> tuple[subprocess.CompletedProcess, Path]:
    """snakemake (a process) with ``cfg`` written next to ``workdir`` as its config file."""
    cfg_file = write_config(workdir, cfg)
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--configfile", str(cfg_file), *args]
    out = record_rules(subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300))
    return out, cfg_file


def pipeline_config(workdir: Path, cfg: dict, *args) -> tuple[subprocess.CompletedProcess, Path]:
    """:func:`smk_config` in this process (:func:`pipeline`; a failure is returned, not raised)."""
    cfg_file = write_config(workdir, cfg)
    return pipeline(workdir, *args, check=False, configfiles=(cfg_file,)), cfg_file


def dry_load(workdir: Path, cfg: dict):
    """What a dry run does with a config before any rule, in-process: ``cfg`` written next to
    ``workdir`` as its config file, then :func:`beluga.workflow.config.load_workflow` (the function
    rules/common.smk calls) with relative paths read from ``workdir``, as ``snakemake -d``'s.
    Returns (the Loaded config or the BelugaError it raised, the config file)."""
    from beluga.core.errors import BelugaError
    from beluga.workflow.config import load_workflow

    workdir.mkdir(parents=True, exist_ok=True)
    cfg_file = workdir.parent / f"{workdir.name}.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        return load_workflow(yaml.safe_load(cfg_file.read_text()), [str(cfg_file)]), cfg_file
    except BelugaError as e:
        return e, cfg_file
    finally:
        os.chdir(cwd)


def load_error(workdir: Path, cfg: dict, *needles: str) -> tuple[str, Path]:
    """The one line a dry run of ``cfg`` stops with (:func:`dry_load`): an error, one line, holding
    every needle, no schema dump; nothing written under ``workdir``. Returns (line, config file)."""
    from beluga.core.errors import BelugaError

    err, cfg_file = dry_load(workdir, cfg)
    assert isinstance(err, BelugaError), f"the config loaded without an error: {err}"
    line = str(err)
    print(line)   # the catalogue's messages: pytest -rP shows them
    assert "\n" not in line and line.strip() == line, line
    assert all(n in line for n in needles), (needles, line)
    for noise in ("Failed validating", "On instance", "Traceback"):
        assert noise not in line, line
    assert not any(workdir.iterdir()), sorted(workdir.iterdir())
    return line, cfg_file


def beluga_cli(*args, cwd=REPO) -> subprocess.CompletedProcess:
    """``python -m beluga ARGS`` run in-process (:func:`beluga.cli.main`, in ``cwd``): its exit status and
    what it printed, as the CompletedProcess of the command (tests/test_cli.py runs the command itself,
    as a process, for the wiring: ``python -m beluga`` and the ``beluga`` script)."""
    import contextlib
    import io

    from beluga.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:   # argparse: a usage error (2), --help / --version (0)
                rc = e.code if isinstance(e.code, int) else 1
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["beluga", *argv], rc, out.getvalue(), err.getvalue())


def output(out: subprocess.CompletedProcess) -> str:
    """What snakemake printed (it prints its errors on stdout, the jobs' on stderr)."""
    return out.stdout + "\n" + out.stderr


# ---------------------------------------------------------------- the bad-input catalogue's limits
TIME_LIMIT = 60          # seconds per case (each must answer in well under its own ``seconds``)
MEM_LIMIT = 2 << 30      # address space a case may add
#: every case of the catalogue (tests/test_bad_inputs*.py): seconds (a case that runs the pipeline: slow) and the
#: address space a case (and every process it starts, which inherits the cap) may add to the worker's
CASE_SECONDS, SLOW_CASE_SECONDS, CASE_MEMORY = 120, 600, 6 << 30


@contextlib.contextmanager
def limited(seconds: int = TIME_LIMIT, extra: int = MEM_LIMIT):
    """A signal alarm after ``seconds`` and the address space capped at what the process uses plus ``extra``
    (the soft limit, never above an enclosing one; both put back after, an enclosing alarm with what is left of
    it)."""
    def expired(*_):
        raise TimeoutError(f"over the {seconds} s limit")

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    cap = min(x for x in (used + extra, soft, hard) if x != resource.RLIM_INFINITY)
    old = signal.signal(signal.SIGALRM, expired)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    start, outer = time.monotonic(), signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        if outer:
            signal.alarm(max(1, outer - int(time.monotonic() - start)))


@pytest.fixture(autouse=True)
def catalogue_limits(request):
    """Every case of the bad-input catalogue under a time limit (:data:`CASE_SECONDS`, :data:`SLOW_CASE_SECONDS`
    for a slow one: a TimeoutError fails it, and kills the process it waits for) and a memory limit (the address
    space capped at the worker's plus :data:`CASE_MEMORY`, inherited by the processes it starts)."""
    if not request.module.__name__.startswith("test_bad_inputs"):
        yield
        return
    with limited(SLOW_CASE_SECONDS if request.node.get_closest_marker("slow") else CASE_SECONDS, CASE_MEMORY):
        yield


def refused(tmp_path, setup: str, call: str, error: str = "BelugaError", seconds: float = 5) -> str:
    """Run ``setup`` then ``call`` (in ``tmp_path``) under the limits: ``call`` must raise ``error`` with one
    line, within ``seconds``; returns the line."""
    here = os.getcwd()
    os.chdir(tmp_path)
    ns: dict = {}
    try:
        exec("from beluga.core.errors import BelugaError\nfrom beluga.suites.release_pickle import MalformedPickle\n"
             + textwrap.dedent(setup), ns)
        with limited():
            t = time.time()
            try:
                exec(call, ns)
            except ns[error] as e:
                took, line = time.time() - t, str(e)
            else:
                pytest.fail(f"not refused: {call}")
    finally:
        os.chdir(here)
    assert "\n" not in line and took < seconds, (took, line)
    return line


def hf_flags(monkeypatch, *, offline: bool | None = None, hub_cache: Path | None = None,
             datasets_cache: Path | None = None) -> None:
    """The Hugging Face settings of this process, set where the libraries read them: huggingface_hub's and
    datasets' constants (read once, when they are imported, from HF_HUB_OFFLINE / HF_HUB_CACHE /
    HF_DATASETS_OFFLINE / HF_DATASETS_CACHE; beluga.data.fetch asks them), and the environment variables for
    the processes a test starts. None: left as it is."""
    from datasets import config as ds_config
    from huggingface_hub import constants

    if offline is not None:
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
        monkeypatch.setattr(ds_config, "HF_HUB_OFFLINE", offline)
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
            monkeypatch.delenv(var, raising=False)
        if offline:
            monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if hub_cache is not None:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
        monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache))
    if datasets_cache is not None:
        monkeypatch.setattr(ds_config, "HF_DATASETS_CACHE", Path(datasets_cache))
        monkeypatch.setenv("HF_DATASETS_CACHE", str(datasets_cache))


# ---------------------------------------------------------------- tiny models of every backbone family
@pytest.fixture(scope="session")
def family_model(tmp_path_factory):
    """``family_model(name)``: the folder of a tiny random model of a backbone family
    (tests/tiny_families.py), built once per test session (per worker under xdist) and shared."""
    from tiny_families import build_family

    root = tmp_path_factory.mktemp("families")
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            built[family] = build_family(family, root / family)
        return built[family]
    return get


def one_torch_thread():
    """As the pipeline's jobs (beluga.model.modeling.configure_torch): one intra-op thread (bit-for-bit results
    depend on the number) and deterministic algorithms, restored afterwards. A generator for a module's
    autouse fixture: ``yield from one_torch_thread()``."""
    import torch

    from beluga.model.modeling import configure_torch

    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    configure_torch(1)
    yield
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)


class Crash(Exception):
    """A killed job, raised right after a checkpoint is written (:func:`crash_after_checkpoint`)."""


def crash_after_checkpoint(monkeypatch, epoch: int):
    """Make ``beluga.model.checkpoint.save`` raise :class:`Crash` right after writing the checkpoint of ``epoch``;
    returns the real ``save`` (to put back)."""
    from beluga.model import checkpoint

    real = checkpoint.save

    def save_then_crash(*a, **k):
        out = real(*a, **k)
        if k["epoch"] == epoch:
            raise Crash
        return out

    monkeypatch.setattr(checkpoint, "save", save_then_crash)
    return real
