"""Hub models through huggingface_hub's own HTTP client, against a minimal
mock of the Hugging Face hub on 127.0.0.1 (``HF_ENDPOINT``): the fetch
(beluga.data.fetch.download_model) resolves a branch to its commit, downloads configs,
tokenizer and safetensors weights and never the pickled ``pytorch_model.bin``;
a training job then loads the model from the cache with ``HF_HUB_OFFLINE=1``
without a single request; an unknown revision stops the fetch with one line.

The mock serves one repository at one commit, with the endpoints
huggingface_hub 2.x uses for ``snapshot_download``:

- ``GET /api/models/<repo>/revision/<rev>``: the repo info (``sha``, ``siblings``);
- ``GET /api/models/<repo>/tree/<rev>[/<path>]``: the recursive file listing (one page);
- ``HEAD|GET /<repo>/resolve/<rev>/<file>``: a file, with ``X-Repo-Commit``, ``ETag``
  and, for LFS files, ``X-Linked-Etag`` / ``X-Linked-Size`` (no ``X-Xet-Hash``: plain HTTP);

an unknown revision is a 404 with ``X-Error-Code: RevisionNotFound``, an
unknown repository one with ``RepoNotFound``, anything else a plain 404."""

import hashlib
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from conftest import ENV, REPO

REPO_ID = "mock-org/tiny-bert"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BRANCH = "main"
PICKLE = "pytorch_model.bin"
LFS = (".safetensors", ".bin")

# a mock hub server and jobs as processes (the hub's settings are read when a process starts)
pytestmark = pytest.mark.slow


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class MockRepo:
    """The files of the mock repository: the offline MiniLM's files plus a
    pickled-weights file that must never be downloaded."""

    def __init__(self):
        from beluga.model.modeling import default_model_path

        root = Path(default_model_path())
        self.files: dict[str, Path | bytes] = {p.relative_to(root).as_posix(): p
                                              for p in sorted(root.rglob("*")) if p.is_file()}
        self.files[PICKLE] = b"\x80\x04 not weights: this file must never be downloaded\n"
        self.meta = {path: self._meta(path) for path in self.files}

    def read(self, path: str) -> bytes:
        src = self.files[path]
        return src if isinstance(src, bytes) else src.read_bytes()

    def _meta(self, path: str) -> dict:
        data = self.read(path)
        meta = {"size": len(data)}
        if path.endswith(LFS):
            sha256 = hashlib.sha256(data).hexdigest()
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {len(data)}\n".encode()
            meta.update(oid=_git_blob_sha1(pointer), lfs={"oid": sha256, "size": len(data),
                                                           "pointerSize": len(pointer)})
        else:
            meta["oid"] = _git_blob_sha1(data)
        return meta

    def tree(self) -> list[dict]:
        """The recursive listing of /api/models/<repo>/tree/<rev>: folders and files."""
        folders = sorted({p.rsplit("/", 1)[0] for p in self.files if "/" in p})
        out = [{"type": "directory", "oid": _git_blob_sha1(f.encode()), "path": f} for f in folders]
        for path, meta in sorted(self.meta.items()):
            out.append({"type": "file", "path": path, **meta})
        return out


class HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "MockHub"

    def log_message(self, fmt, *args):  # quiet: _handle records every request
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None, content_type="application/json",
              length: int | None = None):
        """A response with its Content-Length (keep-alive); HEAD gets the headers only."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj, status: int = 200, headers: dict | None = None):
        self._send(status, json.dumps(obj).encode(), headers)

    def _not_found(self, code: str | None, message: str):
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._json({"error": message}, 404, headers)

    def _revision(self, rev: str) -> str | None:
        return COMMIT if rev in (BRANCH, COMMIT) else None

    def _handle(self):
        self.server.record(self.command, self.path)
        path = unquote(urlsplit(self.path).path)
        repo = self.server.repo
        api = f"/api/models/{REPO_ID}/"
        resolve = f"/{REPO_ID}/resolve/"
        if path.startswith("/api/models/") and not path.startswith(api):
            return self._not_found("RepoNotFound", "Repository not found")
        if path.startswith(api + "revision/") and self.command == "GET":
            rev = path[len(api + "revision/"):]
            if self._revision(rev) is None:
                return self._not_found("RevisionNotFound", f"Invalid rev id: {rev}")
            return self._json({"id": REPO_ID, "modelId": REPO_ID, "sha": COMMIT, "private": False,
                               "siblings": [{"rfilename": p} for p in sorted(repo.files)]})
        if path.startswith(api + "tree/") and self.command == "GET":
            rev, _, sub = path[len(api + "tree/"):].partition("/")
            if self._revision(rev) is None:
                return self._not_found("RevisionNotFound", f"Invalid rev id: {rev}")
            entries = [e for e in repo.tree() if not sub or e["path"].startswith(sub.rstrip("/") + "/")]
            return self._json(entries)
        if path.startswith(resolve) and self.command in ("GET", "HEAD"):
            rev, _, name = path[len(resolve):].partition("/")
            if self._revision(rev) is None:
                return self._not_found("RevisionNotFound", f"Invalid rev id: {rev}")
            if name not in repo.files:
                return self._not_found("EntryNotFound", f"{name} does not exist at {rev}")
            meta = repo.meta[name]
            headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{meta["oid"]}"', "Accept-Ranges": "none"}
            if "lfs" in meta:
                headers.update({"X-Linked-Etag": f'"{meta["lfs"]["oid"]}"', "X-Linked-Size": str(meta["size"])})
            body = b"" if self.command == "HEAD" else repo.read(name)
            return self._send(200, body, headers, content_type="application/octet-stream", length=meta["size"])
        return self._not_found(None, f"no such endpoint: {self.command} {path}")

    def do_GET(self):  # noqa: N802 - http.server's names
        self._handle()

    def do_HEAD(self):  # noqa: N802
        self._handle()

    def do_POST(self):  # noqa: N802 - telemetry or anything else: recorded, refused
        self.server.record(self.command, self.path)
        self._not_found(None, "no such endpoint")


class MockHub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, repo: MockRepo):
        super().__init__(("127.0.0.1", 0), HubHandler)
        self.repo = repo
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def record(self, method: str, path: str) -> None:
        with self.lock:
            self.requests.append((method, unquote(urlsplit(path).path)))

    def seen(self) -> list[tuple[str, str]]:
        with self.lock:
            return list(self.requests)


@pytest.fixture(scope="module")
def hub():
    server = MockHub(MockRepo())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def hub_env(hub: MockHub, base: Path, offline: bool) -> dict:
    """The environment of a fetch (online: the mock as HF_ENDPOINT) or of a job (offline)."""
    env = {k: v for k, v in ENV.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                        "HF_HUB_DISABLE_XET", "HF_HUB_ENABLE_HF_TRANSFER", "HF_HUB_CACHE", "HF_HOME")}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(base / "hf_home"), HF_HUB_CACHE=str(base / "cache"),
               HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_IMPLICIT_TOKEN="1",
               no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost", PYTHONPATH=str(REPO))
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return env


SNIPPET = """
import sys
from beluga.core.errors import BelugaError
try:
{body}
except BelugaError as e:
    print(f"error: {{e}}", file=sys.stderr)
    sys.exit(1)
"""


def run_snippet(body: str, env: dict) -> subprocess.CompletedProcess:
    code = SNIPPET.format(body="\n".join("    " + line for line in body.strip().splitlines()))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=120)


def fetch(name: str, revision: str, marker: Path, env: dict) -> subprocess.CompletedProcess:
    return run_snippet(f"from beluga.data.fetch import download_model\n"
                       f"download_model({name!r}, {revision!r}, {str(marker)!r})", env)


@pytest.fixture(scope="module")
def fetched(hub, tmp_path_factory):
    """The fetch of the mock repository's ``main`` into an empty cache."""
    base = tmp_path_factory.mktemp("hub_fetch")
    marker = base / "data" / "models" / "mock-org--tiny-bert@main.json"
    before = len(hub.seen())
    out = fetch(REPO_ID, BRANCH, marker, hub_env(hub, base, offline=False))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return {"base": base, "marker": marker, "requests": hub.seen()[before:], "out": out}


def test_fetch_resolves_the_branch_and_downloads_safetensors_only(hub, fetched):
    marker = json.loads(fetched["marker"].read_text())
    assert marker["commit"] == COMMIT
    assert marker["model"] == REPO_ID and marker["revision"] == BRANCH
    assert "model.safetensors" in marker["files"] and PICKLE not in marker["files"]

    storage = fetched["base"] / "cache" / "models--mock-org--tiny-bert"
    snapshot = storage / "snapshots" / COMMIT
    assert (snapshot / "model.safetensors").is_file()
    assert (snapshot / "model.safetensors").stat().st_size == hub.repo.meta["model.safetensors"]["size"]
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "1_Pooling/config.json"):
        assert (snapshot / name).is_file(), name
    assert not list((fetched["base"] / "cache").rglob(PICKLE))
    assert not (snapshot / "README.md").exists()          # not one of MODEL_PATTERNS
    assert (storage / "refs" / BRANCH).read_text() == COMMIT

    requests = fetched["requests"]
    paths = [p for _, p in requests]
    assert ("GET", f"/api/models/{REPO_ID}/revision/{BRANCH}") in requests
    assert any(p == f"/{REPO_ID}/resolve/{COMMIT}/model.safetensors" for p in paths), requests
    assert not [p for p in paths if p.endswith(PICKLE)], requests
    assert not [p for p in paths if p.endswith("README.md")], requests
    assert not [p for p in paths if "xet" in p.lower()], requests   # plain HTTP downloads, no Xet


def test_offline_job_loads_the_fetched_commit_without_a_request(hub, fetched):
    before = len(hub.seen())
    out = run_snippet(f"""
from beluga.model.modeling import load_model
model, tokenizer = load_model({REPO_ID!r}, 2, model_lock={str(fetched["marker"])!r})
print(type(model).__name__, model.config.num_labels, model.name_or_path)
""", hub_env(hub, fetched["base"], offline=True))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    cls, labels, where = out.stdout.split()
    assert (cls, labels) == ("BertForSequenceClassification", "2")
    assert Path(where).parts[-2:] == ("snapshots", COMMIT)
    assert hub.seen()[before:] == []


def test_unknown_revision_stops_the_fetch_with_one_line(hub, tmp_path):
    marker = tmp_path / "data" / "models" / "mock-org--tiny-bert@no-such-branch.json"
    out = fetch(REPO_ID, "no-such-branch", marker, hub_env(hub, tmp_path, offline=False))
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert REPO_ID in lines[0] and "no-such-branch" in lines[0]
    assert "RevisionNotFound" in lines[0]
    assert not marker.exists()
    assert not list(tmp_path.rglob(PICKLE)) and not list(tmp_path.rglob("*.safetensors"))


def test_a_commit_missing_from_the_cache_is_downloaded_online_and_refused_offline(hub, fetched, tmp_path):
    """hub_snapshot: a marker's commit not in this machine's cache (another
    HF_HOME) is downloaded by commit when online, and stops the job with one
    line naming the cache when HF_HUB_OFFLINE is set."""
    body = f"""
from beluga.model.modeling import resolve_model
print(resolve_model({REPO_ID!r}, model_lock={str(fetched["marker"])!r}))
"""
    out = run_snippet(body, hub_env(hub, tmp_path / "offline", offline=True))
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert COMMIT[:12] in lines[0] and "HF_HUB_OFFLINE" in lines[0] and str(tmp_path / "offline" / "cache") in lines[0]

    before = len(hub.seen())
    out = run_snippet(body, hub_env(hub, tmp_path / "online", offline=False))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    snapshot = Path(out.stdout.strip())
    assert snapshot.parts[-2:] == ("snapshots", COMMIT) and (snapshot / "model.safetensors").is_file()
    paths = [p for _, p in hub.seen()[before:]]
    assert not [p for p in paths if "/revision/" in p], paths          # a commit needs no resolving
    assert f"/{REPO_ID}/resolve/{COMMIT}/model.safetensors" in paths
    assert not [p for p in paths if p.endswith(PICKLE)], paths
    assert not (snapshot / PICKLE).exists()
