"""The i.i.d. data of a run as its tasks' ``source.json`` record them (rule prepare_iid), and
which tasks did not train and test on the paper's data (:func:`beluga.data.iid.fallback_note`:
a paper source, ``sst2`` / ``qqp`` / ``squad``, read from a fallback such as the Quora release
or the SQuAD dev set alone). That is said in Table 3's footnote (:func:`fallback_lines`, used by
:mod:`beluga.report.tables`), in each task's scores.md, on the report's page
(:func:`iid_data_html`) and at the end of the run's console output (:func:`run_end_lines`)."""

from __future__ import annotations

import json
from pathlib import Path

from beluga.core.errors import DataError
from beluga.core.pages import render_page
from beluga.data.iid import IID_SPLITS, fallback_note

#: the mark of a task whose i.i.d. data are not the paper's (Table 3's headers and footnote)
DAGGER = "†"
#: where the footnote points to
SEE = "each task's iid/source.json; docs/DEVIATIONS.md, 'i.i.d. data files'"


def read_source_record(path) -> dict:
    """A task's ``source.json``; a file that is not a JSON object is one DataError line naming it."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"iid source record {path}: field '(top level)': cannot be read ({err})") from None
    if not isinstance(record, dict) or not isinstance(record.get("source"), str):
        raise DataError(f"iid source record {path}: field 'source': missing (a source.json of rule prepare_iid "
                        "is needed)")
    return record


def read_source_records(tasks, paths) -> dict[str, dict]:
    """task -> its ``source.json`` (``paths`` aligned with ``tasks``)."""
    return {t: read_source_record(p) for t, p in zip(tasks, paths, strict=True)}


def fallback_line(task: str, record: dict) -> str | None:
    """One sentence naming the task, its source and what it read instead of the paper's data; None for
    the paper's data (or a source that is not one of the paper's)."""
    note = fallback_note(record)
    return None if note is None else f"{task.upper()} (iid.source {record['source']}): trained and tested on {note}."


def fallback_lines(records: dict[str, dict]) -> dict[str, str]:
    """task -> :func:`fallback_line`, for the tasks whose i.i.d. data are not the paper's (in ``records``' order)."""
    lines = {t: fallback_line(t, r) for t, r in records.items()}
    return {t: line for t, line in lines.items() if line is not None}


def footnote_markdown(lines: dict[str, str]) -> str:
    """Table 3's / scores.md's footnote (empty when every task read the paper's data)."""
    if not lines:
        return ""
    return "\n".join([f"{DAGGER} Not the paper's i.i.d. data ({SEE}):", "",
                      *(f"- {line}" for line in lines.values())]) + "\n"


def run_end_lines(paths: dict[str, str]) -> list[str]:
    """The lines a finished run prints last (Snakefile ``onsuccess``): one per task whose recorded i.i.d.
    data are not the paper's, under a heading line; nothing when all are (or none was prepared: a
    target that did not need them). ``paths``: task -> its ``source.json``; one that is absent is
    skipped, one that cannot be read is a line saying so (the run itself succeeded)."""
    found = []
    for task, path in paths.items():
        if not Path(path).is_file():
            continue
        try:
            line = fallback_line(task, read_source_record(path))
        except DataError as err:
            line = f"{task.upper()}: {err}"
        if line is not None:
            found.append(line)
    if not found:
        return []
    return [f"BELUGA warning: the i.i.d. data of {len(found)} task(s) are not the paper's; Table 3 and "
            f"scores.md say so in a footnote ({SEE}):", *(f"  {line}" for line in found)]


def iid_data_html(records: dict[str, dict]) -> str:
    """The report's page of the run's i.i.d. data (beluga/templates/iid_data.html.j2, every value escaped): a
    warning naming every task whose data are not the paper's, then one row per task (source, origin, split
    rule, rows per split, the paper's data?)."""
    lines = fallback_lines(records)
    rows = []
    for task, r in records.items():
        counts = r.get("rows") or {}
        paper = "no: fallback" if task in lines else ("yes" if r.get("paper_split") else "not a paper source")
        rows.append({"task": task.upper(), "source": r.get("source"), "origin": r.get("origin"),
                     "split": r.get("split"), "fallback": task in lines, "paper": paper,
                     "rows": " / ".join(f"{int(counts[s]):,}" if s in counts else "?" for s in IID_SPLITS)})
    return render_page("iid_data.html.j2", title="i.i.d. data of this run", fallbacks=list(lines.values()),
                       see=SEE, dagger=DAGGER, rows=rows)
