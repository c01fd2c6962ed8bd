"""rules/fetch.smk: downloads verified into the data folder, hub models into the Hugging Face cache, the lock."""

from __future__ import annotations

from beluga.data import fetch as remote


def fetch_file(*, download: str, rel: str, expected: str | None, out_file: str) -> None:
    """A downloaded file (the HTTP storage plugin's local copy) checked against
    its expected checksum and moved into the data folder."""
    remote.install(download, out_file, rel, expected)


def fetch_model(*, model: list, out_marker: str) -> None:
    """A hub model at a revision into the Hugging Face cache; its marker records the commit."""
    name, revision = model
    remote.download_model(name, revision, out_marker)


def fetch_lock(*, data_dir: str, files: dict, markers: list[str], out_stamp: str) -> None:
    """Every fetched file checked against the lock and the published checksums;
    the lock updated in place (earlier entries kept); the stamp written."""
    from beluga.core.io import write_text

    recorded = {}
    for path in markers:
        marker = remote.read_marker(path)
        recorded[marker["model"] + "@" + marker["revision"]] = {k: marker[k] for k in ("model", "revision", "commit")}
    lock = remote.write_lock(data_dir, files, recorded)
    write_text(f"{len(lock['files'])} files, {len(lock['models'])} models in {remote.FETCH_LOCK_NAME}\n", out_stamp)
