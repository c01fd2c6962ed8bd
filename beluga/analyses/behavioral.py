"""Behavioral testing of any model without training (docs/TESTING.md):
exporting a suite's inputs for models outside Python, reading their
predictions in CheckList's formats, and the failure summary a person reads.

Export order (``suite export``): the suite's cases in file order, each case's
inputs in order — one row per (case_id, input_idx). A predictions file in one
of CheckList's line formats has one line per exported row, in that order.

Prediction formats (``score --format``; default from the file's extension):

- ``parquet`` (``.parquet``), or a keyed table ``csv`` / ``tsv`` / ``jsonl``
  with ``case_id``, ``input_idx`` and ``probs`` (a list, or space-separated
  numbers), ``pred`` (a label index) or, for READ, ``answer``;
- CheckList's line formats (``.txt`` and others: give ``--format``):
  ``pred_only`` (a label index, or for READ the answer string),
  ``binary_conf`` (P(class 1)), ``softmax`` (the probabilities,
  space-separated), ``pred_and_conf`` (label and its probability),
  ``pred_and_softmax`` (label, then the probabilities).

A label index alone becomes a one-hot distribution and ``pred_and_conf`` puts
the rest of the probability mass evenly on the other classes: CheckList's own
expectations compare predicted classes (and, for INV, the predicted class's
confidence), which these reproduce.

The predicted class is taken from the probabilities. CheckList's
``read_pred_file`` keeps a stated label (``pred_and_conf``,
``pred_and_softmax``) apart from the confidences and its expectations compare
the label; so a line whose label is not the class of the highest probability
(a tie included, unless the label is the first of the tied classes) would be
scored otherwise than CheckList scores it, and is refused, as is a keyed row
whose ``pred`` contradicts its ``probs``. Text files are UTF-8 (a byte-order
mark is dropped), split into lines on ``\n`` and ``\r\n`` only: other Unicode
line separators (U+0085, U+2028, ...) belong to the line, as in a READ answer.
Every malformed value is refused with one line naming the file, the line (from
1) and the field.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import re
from html import escape as e
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.errors import DataError
from beluga.health import SUM_TOLERANCE, bad_probability_rows

KEYED_FORMATS = ("parquet", "csv", "tsv", "jsonl")
LINE_FORMATS = ("pred_only", "binary_conf", "softmax", "pred_and_conf", "pred_and_softmax")
FORMATS = KEYED_FORMATS + LINE_FORMATS


def export_rows(suite: pd.DataFrame, head: str) -> pd.DataFrame:
    """Every input of the suite, one row per (case_id, input_idx), in export order:
    ``text`` (and ``text_b`` for pairs), or ``context`` and ``question`` for QA."""
    cid, idx, a, b = [], [], [], []
    has_b = suite["inputs_b"].notna().any() if "inputs_b" in suite.columns else False
    for r in suite.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            cid.append(str(r.case_id))
            idx.append(j)
            a.append(str(t))
            b.append(str(r.inputs_b[j]) if has_b and r.inputs_b is not None else None)
    out = pd.DataFrame({"case_id": cid, "input_idx": idx})
    if head == "qa":
        out["context"], out["question"] = a, b
    else:
        out["text"] = a
        if has_b:
            out["text_b"] = b
    return out


def write_export(rows: pd.DataFrame, path: str) -> str:
    """TSV by default, JSONL for ``.jsonl``; written atomically. Returns the format."""
    from beluga.io import atomic_path

    p = Path(path)
    if p.is_dir():
        raise DataError(f"export {path}: field '--out': is a folder; name the file to write (.tsv or .jsonl)")
    fmt = "jsonl" if p.name.endswith(".jsonl") else "tsv"
    if fmt == "tsv":
        bad = rows.drop(columns=["case_id", "input_idx"]).apply(
            lambda c: c.astype(str).str.contains("[\t\n\r]", regex=True)).to_numpy().any()
        if bad:
            raise DataError(f"export {path}: field 'text': an input contains a tab or a line break; write JSONL "
                            "(.jsonl) instead")
    with atomic_path(p) as tmp:
        if fmt == "jsonl":
            rows.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            rows.to_csv(tmp, sep="\t", index=False)
    return fmt


def infer_format(path: str, given: str | None) -> str:
    if given is not None:
        if given not in FORMATS:
            raise DataError(f"predictions {path}: field '--format': {given!r} is not one of {', '.join(FORMATS)}")
        return given
    name = Path(path).name.lower()
    for ext, fmt in ((".parquet", "parquet"), (".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl")):
        if name.endswith(ext):
            return fmt
    raise DataError(f"predictions {path}: field '--format': cannot tell the format from the extension; give "
                    f"--format ({', '.join(FORMATS)})")


# ---------------------------------------------------------------- reading a predictions file
#
# Every malformed value ends in one DataError naming the file, the line (text
# files are counted in lines from 1, split on "\n" and "\r\n" only) and the
# field; values are checked here, where the line is known, before the scorer
# sees them.

#: the field a line of each CheckList line format holds (for the messages)
LINE_FIELDS = {"pred_only": "pred", "binary_conf": "conf", "softmax": "softmax", "pred_and_conf": "pred",
               "pred_and_softmax": "pred"}
_NOT_UTF8 = re.compile("[\udc80-\udcff]")     # bytes that are not UTF-8, as decoded with surrogateescape


def _clip(value, n: int = 60) -> str:
    """repr of a value from the file, at most about ``n`` characters (control characters escaped)."""
    r = repr(value)
    return r if len(r) <= n else r[:n - 1] + "…"


def _where(path: str, line: int) -> str:
    return f"predictions {path}: line {line}"


def _utf8(text: str, path: str, line: int, field: str) -> str:
    """``text`` (decoded with surrogateescape) if it was UTF-8; otherwise the one-line error."""
    m = _NOT_UTF8.search(text)
    if m:
        byte = ord(m.group()) - 0xdc00
        raise DataError(f"{_where(path, line)}: field '{_plain(field)}': not UTF-8 text (byte 0x{byte:02x} "
                        f"at character {m.start() + 1}); save the file as UTF-8")
    return text


def _read_text(path: str, fmt: str) -> str:
    """The file's text (a UTF-8 byte-order mark dropped; bytes that are not UTF-8 kept as surrogates for
    :func:`_utf8` to name their line and field); files that are not text at all are refused here."""
    data = Path(path).read_bytes()
    what = None
    if data.startswith(b"PAR1"):
        what = "a Parquet file: give --format parquet (or a .parquet name and no --format)"
    elif data.startswith(b"\x1f\x8b"):
        what = "gzip-compressed: decompress it first"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        what = "UTF-16 text: save it as UTF-8"
    if what:
        raise DataError(f"predictions {path}: field '--format': {fmt} predictions are UTF-8 text; the file is {what}")
    text = data.decode("utf-8", "surrogateescape")
    return text[1:] if text.startswith("\ufeff") else text


def _lines(text: str) -> list[str]:
    """Lines split on "\\n" (a "\\r" before it dropped) and nothing else: other Unicode line separators
    (U+0085, U+2028, \\x0b, \\x0c, \\x1c-\\x1e) are part of the line, as in an answer string."""
    lines = [t[:-1] if t.endswith("\r") else t for t in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()                     # the final newline
    return lines


def _looks_keyed(text: str) -> str | None:
    """``jsonl``, ``csv`` or ``tsv`` when the first non-blank line is a keyed table's record or header."""
    first = text.lstrip().split("\n", 1)[0].strip()
    if first.startswith("{"):
        try:
            if "case_id" in json.loads(first):
                return "jsonl"
        except (json.JSONDecodeError, TypeError):
            return None
        return None
    for sep, name in (("\t", "tsv"), (",", "csv")):
        cells = [c.strip().strip('"') for c in first.split(sep)]
        if "case_id" in cells and "input_idx" in cells:
            return name
    return None


def _label(value, path: str, line: int, field: str, k: int | None) -> int:
    """A label index: an integer, or text / a JSON number that is one; in 0..k-1 when ``k`` is given."""
    x = None
    if isinstance(value, int) and not isinstance(value, bool):
        x = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        x = int(value)
    elif isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            f = math.nan
        if math.isfinite(f) and f.is_integer():
            x = int(f)
    if x is None:
        raise DataError(f"{_where(path, line)}: field '{field}': {_clip(value)} is not a label index "
                        f"(an integer{f' in 0..{k - 1}' if k else ''})")
    if k is not None and not 0 <= x < k:
        raise DataError(f"{_where(path, line)}: field '{field}': label {x} is outside 0..{k - 1}")
    return x


def _numbers(text: str, path: str, line: int, what: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split()]
    except ValueError:
        raise DataError(f"{_where(path, line)}: field '{what}': {_clip(text)} is not a list of numbers") from None
    if not vals:
        raise DataError(f"{_where(path, line)}: field '{what}': empty (no numbers)")
    return vals


def _probs_value(value, path: str, line: int, field: str) -> list[float]:
    """A keyed table's ``probs``: a JSON list of numbers, or text holding one (``[...]``) or space-separated
    numbers."""
    if isinstance(value, str):
        s = value.strip()
        if not s.startswith("["):
            return _numbers(s, path, line, field)
        try:
            value = json.loads(s)
        except json.JSONDecodeError as e:
            raise DataError(f"{_where(path, line)}: field '{field}': {_clip(s)} is not a JSON list of numbers "
                            f"({e.msg} at character {e.pos + 1})") from None
    if (isinstance(value, list) and value
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)):
        return [float(x) for x in value]
    raise DataError(f"{_where(path, line)}: field '{field}': {_clip(value)} is not a list of numbers")


def _check_distributions(probs: list[list[float]], lines: list[int], labels: list[int | None] | None,
                         path: str, field: str, label_field: str = "pred") -> None:
    """Every row a probability distribution of one length and, where the line states a label too, that label
    the class of the highest probability (the scorer takes the predicted class from the probabilities;
    CheckList's expectations take the stated label: a line where the two differ would be scored otherwise
    than CheckList scores it, so it is refused)."""
    if not probs:
        return
    n0 = len(probs[0])
    for p, ln in zip(probs, lines):
        if len(p) != n0:
            raise DataError(f"{_where(path, ln)}: field '{field}': {len(p)} probabilities, but line {lines[0]} "
                            f"has {n0} (every line needs one per class)")
    arr = np.asarray(probs, dtype=np.float64)
    bad = bad_probability_rows(arr)
    if len(bad):
        i = int(bad[0])
        raise DataError(f"{_where(path, lines[i])}: field '{field}': {probs[i]} is not a probability distribution "
                        f"(values must be finite, in [0, 1] and sum to 1 within {SUM_TOLERANCE}); {len(bad)} such "
                        "line(s)")
    if labels is None:
        return
    top = arr.argmax(axis=1)
    for i, (lab, ln) in enumerate(zip(labels, lines)):
        if lab is None or lab == top[i]:
            continue
        if not 0 <= lab < n0:
            raise DataError(f"{_where(path, ln)}: field '{label_field}': label {lab} is outside 0..{n0 - 1} "
                            f"(the line has {n0} probabilities)")
        j = int(top[i])
        how = (f"ties with class {j} at {arr[i, j]:g}, and the scorer takes the first class of highest probability"
               if arr[i, lab] == arr[i, j] else
               f"has probability {arr[i, lab]:g} but class {j} has {arr[i, j]:g}")
        raise DataError(f"{_where(path, ln)}: field '{label_field}': label {lab} contradicts the probabilities "
                        f"{probs[i]}: it {how} (the scorer takes the predicted class from the probabilities, CheckList "
                        "from the stated label): correct the label or the probabilities")


def _probability(x: float, text: str, path: str, line: int) -> float:
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise DataError(f"{_where(path, line)}: field 'conf': {_clip(text)} is not a probability (finite, in [0, 1])")
    return x


def parse_line(text: str, fmt: str, k: int, path: str, line: int, qa: bool):
    """One line of a CheckList prediction file -> (label or None, probabilities), or the answer for QA.
    The probabilities are checked, and the label against them, by :func:`_check_distributions`."""
    if qa:
        if fmt != "pred_only":
            raise DataError(f"predictions {path}: field '--format': READ predictions are answers (pred_only)")
        return _utf8(text, path, line, "answer")
    text = _utf8(text, path, line, LINE_FIELDS[fmt]).strip()
    if fmt == "pred_only":
        if len(text.split()) != 1:
            raise DataError(f"{_where(path, line)}: field 'pred': {_clip(text)} is not one label index")
        lab = _label(text, path, line, "pred", k)
        return None, [1.0 if i == lab else 0.0 for i in range(k)]
    if fmt == "binary_conf":
        vals = _numbers(text, path, line, "conf")
        if len(vals) != 1 or k != 2:
            raise DataError(f"{_where(path, line)}: field 'conf': binary_conf is one probability of class 1 for a "
                            "two-class model")
        _probability(vals[0], text, path, line)
        return None, [1.0 - vals[0], vals[0]]
    if fmt == "softmax":
        return None, _numbers(text, path, line, "softmax")
    parts = text.split()
    if not parts:
        raise DataError(f"{_where(path, line)}: field 'pred': empty line (expected a label, then "
                        f"{'its probability' if fmt == 'pred_and_conf' else 'the probabilities'})")
    lab = _label(parts[0], path, line, "pred", k if fmt == "pred_and_conf" else None)
    if fmt == "pred_and_softmax":
        if len(parts) < 2:
            raise DataError(f"{_where(path, line)}: field 'softmax': missing (pred_and_softmax is a label, then the "
                            "probabilities)")
        return lab, _numbers(" ".join(parts[1:]), path, line, "softmax")
    if len(parts) != 2:
        raise DataError(f"{_where(path, line)}: field 'conf': pred_and_conf is a label and its probability "
                        f"({len(parts)} values here)")
    conf = _probability(_numbers(parts[1], path, line, "conf")[0], parts[1], path, line)
    rest = (1.0 - conf) / (k - 1) if k > 1 else 0.0
    return lab, [conf if i == lab else rest for i in range(k)]


def _read_lines(path: str, text: str, fmt: str, order: pd.DataFrame | None, k: int, qa: bool) -> pd.DataFrame:
    if qa and fmt != "pred_only":
        raise DataError(f"predictions {path}: field '--format': READ predictions are answers (pred_only)")
    keyed = _looks_keyed(text)
    if keyed:
        raise DataError(f"predictions {path}: field '--format': the file looks like a keyed {keyed.upper()} table "
                        f"(case_id, input_idx), not {fmt} lines: give --format {keyed}")
    lines = _lines(text)
    if not qa:
        while lines and not lines[-1].strip():
            lines.pop()                 # blank lines at the end (an answer may be empty, a label may not)
    if order is None or len(lines) != len(order):
        raise DataError(f"predictions {path}: field 'path': {len(lines)} line(s) for the "
                        f"{0 if order is None else len(order)} inputs of the export (one line per input, "
                        "in the export's order)")
    col = "answer" if qa else "probs"
    if qa:
        values = [parse_line(t, fmt, k, path, i + 1, qa) for i, t in enumerate(lines)]
    else:
        parsed = [parse_line(t, fmt, k, path, i + 1, qa) for i, t in enumerate(lines)]
        values = [p for _, p in parsed]
        field = {"binary_conf": "conf", "softmax": "softmax", "pred_and_softmax": "softmax"}.get(fmt, "pred")
        _check_distributions(values, list(range(1, len(values) + 1)), [lab for lab, _ in parsed], path, field)
    return pd.DataFrame({"case_id": order["case_id"].to_numpy(), "input_idx": order["input_idx"].to_numpy(),
                         col: values})


def _keyed_records(path: str, text: str, fmt: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """(columns, [(line, record)]) of a CSV / TSV with a header line, or of JSONL (one object per line)."""
    records: list[tuple[int, dict]] = []
    if fmt == "jsonl":
        cols: dict = {}
        for i, t in enumerate(_lines(text), 1):
            if not t.strip():
                continue
            try:
                d = json.loads(t)
            except json.JSONDecodeError as e:
                _utf8(t, path, i, "json")
                hint = _looks_keyed(text)
                hint = f"; the file looks like {hint.upper()}: give --format {hint}" if hint and hint != fmt else ""
                raise DataError(f"{_where(path, i)}: field 'json': not valid JSON ({e.msg} at character "
                                f"{e.colno}){hint}") from None
            if not isinstance(d, dict):
                raise DataError(f"{_where(path, i)}: field 'json': {_clip(t)} is not a JSON object (one prediction "
                                "per line, with case_id, input_idx and probs, pred or answer)")
            for key, v in d.items():
                _utf8(key, path, i, "json")
                if isinstance(v, str):
                    _utf8(v, path, i, key)
            records.append((i, d))
            cols.update(dict.fromkeys(d))
        if not records:
            raise DataError(f"predictions {path}: field 'path': the file has no predictions (no JSON line)")
        return list(cols), records
    sep = "\t" if fmt == "tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    header: list[str] | None = None
    end = 0
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if not row:
                continue
            if header is None:
                header = [_utf8(c, path, start, "header").strip() for c in row]
                continue
            if len(row) != len(header):
                name = header[len(row)] if len(row) < len(header) else f"(column {len(header) + 1})"
                raise DataError(f"{_where(path, start)}: field '{_plain(name)}': {len(row)} field(s) where the "
                                f"header has {len(header)} ({sep!r}-separated)")
            records.append((start, {c: _utf8(v, path, start, c) for c, v in zip(header, row)}))
    except csv.Error as e:
        raise DataError(f"{_where(path, end + 1)}: field 'path': not a readable {fmt.upper()} file ({e})") from None
    if header is None:
        raise DataError(f"predictions {path}: field 'path': the file is empty (a {fmt.upper()} file needs a header "
                        "line: case_id, input_idx and probs, pred or answer)")
    if not records:
        raise DataError(f"predictions {path}: field 'case_id': no prediction rows (only the header line)")
    return header, records


def _case_key(d: dict, path: str, line: int) -> tuple[str, int]:
    cid = d.get("case_id")
    if isinstance(cid, bool) or not isinstance(cid, (str, int)) or str(cid).strip() == "":
        raise DataError(f"{_where(path, line)}: field 'case_id': "
                        f"{'missing' if cid in (None, '') else f'{_clip(cid)} is not a case id (a string)'}")
    idx = d.get("input_idx")
    if idx is None or (isinstance(idx, str) and not idx.strip()):
        raise DataError(f"{_where(path, line)}: field 'input_idx': missing")
    x = None
    if isinstance(idx, int) and not isinstance(idx, bool):
        x = idx
    elif isinstance(idx, float) and idx.is_integer():
        x = int(idx)
    elif isinstance(idx, str):
        try:
            f = float(idx.strip())
        except ValueError:
            f = math.nan
        if math.isfinite(f) and f.is_integer():
            x = int(f)
    if x is None:
        raise DataError(f"{_where(path, line)}: field 'input_idx': {_clip(idx)} is not an integer")
    return str(cid), x


def _read_keyed(path: str, text: str, fmt: str, k: int, qa: bool) -> pd.DataFrame:
    cols, records = _keyed_records(path, text, fmt)
    missing = [c for c in ("case_id", "input_idx") if c not in cols]
    if not missing:
        if qa and "answer" not in cols:
            missing = ["answer"]
        elif not qa and "probs" not in cols and "pred" not in cols:
            raise DataError(f"predictions {path}: field 'probs': need a probs or pred column (columns: {cols})")
    if missing:
        hint = _looks_keyed(text)
        hint = f"; the file looks like {hint.upper()}: give --format {hint}" if hint and hint != fmt else ""
        raise DataError(f"predictions {path}: field '{missing[0]}': column missing (columns: {cols}){hint}")
    cids, idxs, lines, values, labels = [], [], [], [], []
    seen: dict[tuple[str, int], int] = {}
    for ln, d in records:
        key = _case_key(d, path, ln)
        if key in seen:
            raise DataError(f"{_where(path, ln)}: field 'case_id'/'input_idx': case {key[0]!r}, input {key[1]} "
                            f"again (first on line {seen[key]})")
        seen[key] = ln
        cids.append(key[0])
        idxs.append(key[1])
        lines.append(ln)
        if qa:
            a = d.get("answer")
            if a is not None and not isinstance(a, str):
                raise DataError(f"{_where(path, ln)}: field 'answer': {_clip(a)} is not a string (an answer, or null "
                                "for none)")
            values.append("" if a is None else a)
            continue
        lab = None
        if "pred" in cols and not (d.get("pred") in (None, "") and "probs" in cols):
            lab = _label(d.get("pred"), path, ln, "pred", None if "probs" in cols else k)
        if "probs" in cols:
            values.append(_probs_value(d.get("probs"), path, ln, "probs"))
            labels.append(lab)
        else:
            values.append([1.0 if i == lab else 0.0 for i in range(k)])
            labels.append(None)
    if qa:
        return pd.DataFrame({"case_id": cids, "input_idx": idxs, "answer": values})
    _check_distributions(values, lines, labels, path, "probs")
    return pd.DataFrame({"case_id": cids, "input_idx": idxs, "probs": values})


def read_predictions(path: str, fmt: str, order: pd.DataFrame | None, k: int, qa: bool) -> pd.DataFrame:
    """A predictions file -> DataFrame(case_id, input_idx, probs | answer).
    ``order``: the export rows (case_id, input_idx) that line formats follow;
    ``k``: the model's classes (a label index becomes a one-hot distribution of length k)."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"predictions {path}: field 'path': file does not exist")
    if fmt == "parquet":
        try:
            df = pd.read_parquet(p)
        except (OSError, ValueError) as e:
            raise DataError(f"predictions {path}: field 'path': not a readable Parquet file "
                            f"({' '.join(str(e).split())})") from None
        for c in ("case_id", "input_idx", "answer" if qa else "probs"):
            if c not in df.columns:
                raise DataError(f"predictions {path}: field '{c}': column missing (columns: {list(df.columns)})")
        return df
    text = _read_text(path, fmt)
    if fmt in LINE_FORMATS:
        return _read_lines(path, text, fmt, order, k, qa)
    return _read_keyed(path, text, fmt, k, qa)


# ---------------------------------------------------------------- the failure summary


def _short(text, n: int = 70) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _first_diff(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _around(text: str, at: int, n: int) -> str:
    """``text`` shortened to ``n`` characters around position ``at`` (where a perturbation changed it)."""
    text = str(text)
    if len(text) <= n or at < n - 25:
        return _short(text, n)
    start = max(0, min(at - 25, len(text) - (n - 2)))
    return "…" + _short(text[start:], n - 1)


def expectation_text(expect: str, params: str | None) -> str:
    p = json.loads(params) if params else {}
    p = {k: v for k, v in p.items() if k != "train"}
    return expect + (" " + ", ".join(f"{k}={v}" for k, v in p.items()) if p else "")


def prediction_text(value, ttype) -> str:
    if ttype.head == "qa":
        return repr(_short(value, 40))
    probs = np.asarray(value, dtype=float)
    suite = ttype.suite_probs(probs[None, :])[0]      # what the expectation sees (SENT: three classes)
    k = int(suite.argmax())
    shown = f"{ttype.suite_labels.get(k, str(k))} ({suite[k]:.2f})"
    if len(probs) != len(suite):   # the model's own classes too
        j = int(probs.argmax())
        shown += f"; model: {ttype.iid_labels.get(j, str(j))} {probs[j]:.2f}"
    return shown


def failure_summary(suite: pd.DataFrame, status: pd.DataFrame, preds: pd.DataFrame, ttype,
                    k: int = 3) -> tuple[pd.DataFrame, dict]:
    """Per functionality (class, type, n cases, n scored, n failed, failure
    rate) and up to ``k`` failing cases each (inputs, expectation, predictions)."""
    from beluga.scoring import FAIL, FILTERED

    st = status.set_index("case_id")["status"]
    col = "answer" if ttype.head == "qa" else "probs"
    pv = preds.set_index(["case_id", "input_idx"])[col]
    rows, examples = [], {}
    for func, g in suite.groupby("functionality", sort=False):
        s = g["case_id"].map(st)
        n_scored, n_failed = int((s != FILTERED).sum()), int((s == FAIL).sum())
        rows.append({"capability": g["capability"].iat[0], "functionality": func, "test_type": g["test_type"].iat[0],
                     "n_cases": len(g), "n_scored": n_scored, "n_failed": n_failed,
                     "failure_rate": n_failed / n_scored if n_scored else float("nan")})
        ex = []
        for r in g[s.to_numpy() == FAIL].head(k).itertuples(index=False):
            inputs = [{"input": shown, "prediction": prediction_text(pv.get((str(r.case_id), j)), ttype)}
                      for j, shown in _shown_inputs(r, ttype)]
            ex.append({"case_id": str(r.case_id), "expectation": _expected(r, ttype),
                       "n_inputs": len(r.inputs), "inputs": inputs})
        examples[func] = ex
    return pd.DataFrame(rows), examples


def _shown_inputs(r, ttype) -> list[tuple[int, str]]:
    """(index, text shown) of a case's first four inputs, each around where it differs from the original."""
    shown_inputs = []
    texts = [str(x) for x in r.inputs]
    for j, t in enumerate(texts[:4]):
        b = r.inputs_b[j] if getattr(r, "inputs_b", None) is not None else None
        # where this input differs from the original (the original: from the first perturbation)
        other = texts[1] if j == 0 and len(texts) > 1 else texts[0]
        at = _first_diff(t, other)
        shown = _around(t, at, 70) if b is None else (
            f"{_short(b, 40)} | {_around(t, at, 50)}" if ttype.head == "qa"
            else f"{_around(t, at, 45)} | {_short(b, 45)}")
        shown_inputs.append((j, shown))
    return shown_inputs


def _expected(r, ttype) -> str:
    """A case's expectation as the summary shows it (with its label or answer)."""
    expected = expectation_text(r.expect, r.expect_params)
    labels = getattr(r, "labels", None)
    if labels is not None and len(labels) and ttype.head != "qa":
        names = sorted({ttype.suite_labels.get(int(x), str(x)) for x in labels if x is not None})
        expected += f" (label {' / '.join(names)})"
    answers = getattr(r, "answers", None)
    if answers is not None and len(answers) and ttype.head == "qa":
        expected += f" (answer {_short(answers[0], 30)!r})"
    return expected


def model_labels(n: int) -> list[str]:
    """The short names of ``n`` models in a summary over several models: m1, m2, ... (command-line order)."""
    return [f"m{i}" for i in range(1, n + 1)]


def model_rate_column(model: str) -> str:
    """The column of one model's failure rate in functionalities.csv over several models."""
    return f"failure_rate[{model}]"


def failure_summary_models(suite: pd.DataFrame, statuses: list[pd.DataFrame], preds: list[pd.DataFrame], ttype,
                           models: list[str], k: int = 3) -> tuple[pd.DataFrame, dict]:
    """:func:`failure_summary` over several models (e.g. the training seeds of one system) tested on the
    same suite, ``statuses[i]`` / ``preds[i]`` being model ``models[i]``'s.

    Per functionality: class, functionality, type, cases; ``n_scored`` / ``n_failed`` summed over the
    models; ``failure_rate``, the mean over the models of each model's own failure rate (a model that scored
    no case of the functionality left out); ``n_models`` (the models in that mean); ``failure_rate_sd``
    (sample standard deviation, ``ddof=1``; NaN with one), ``_min``, ``_max``; and one column per model
    (:func:`model_rate_column`). Failing cases: up to ``k`` per functionality, those failing for the most
    models first (suite order among equals), each with ``n_failing``, ``failing`` (indices of the models
    that fail it) and per input the ``predictions`` of every model."""
    from beluga.scoring import FAIL

    if not (len(models) == len(statuses) == len(preds)) or len(models) < 2:
        raise ValueError("failure_summary_models: one status and one predictions frame per model, two or more")
    per_model = [failure_summary(suite, st, pr, ttype, k=0)[0] for st, pr in zip(statuses, preds)]
    funcs = per_model[0][["capability", "functionality", "test_type", "n_cases"]].copy()
    for f in per_model[1:]:
        if f["functionality"].tolist() != funcs["functionality"].tolist():   # same suite: cannot happen
            raise ValueError("failure_summary_models: the models' functionalities differ")
    funcs["n_scored"] = sum(f["n_scored"].to_numpy() for f in per_model)
    funcs["n_failed"] = sum(f["n_failed"].to_numpy() for f in per_model)
    rates = pd.DataFrame({m: f["failure_rate"].to_numpy(dtype=float) for m, f in zip(models, per_model)})
    funcs["failure_rate"] = rates.mean(axis=1, skipna=True).to_numpy()
    funcs["n_models"] = rates.notna().sum(axis=1).astype(int).to_numpy()
    funcs["failure_rate_sd"] = rates.std(axis=1, ddof=1, skipna=True).to_numpy()
    funcs["failure_rate_min"] = rates.min(axis=1, skipna=True).to_numpy()
    funcs["failure_rate_max"] = rates.max(axis=1, skipna=True).to_numpy()
    for m in models:
        funcs[model_rate_column(m)] = rates[m].to_numpy()

    col = "answer" if ttype.head == "qa" else "probs"
    pvs = [p.set_index(["case_id", "input_idx"])[col] for p in preds]
    failed = pd.DataFrame(np.stack([suite["case_id"].map(st.set_index("case_id")["status"]).to_numpy() == FAIL
                                    for st in statuses], axis=1), index=suite.index)     # cases x models
    n_failing = failed.sum(axis=1)
    examples = {}
    for func, g in suite.groupby("functionality", sort=False):
        counts = n_failing.loc[g.index]
        ranked = counts[counts > 0].sort_values(ascending=False, kind="stable").head(k)
        ex = []
        for i, r in zip(ranked.index, g.loc[ranked.index].itertuples(index=False)):
            inputs = [{"input": shown,
                       "predictions": [prediction_text(pv.get((str(r.case_id), j)), ttype) for pv in pvs]}
                      for j, shown in _shown_inputs(r, ttype)]
            ex.append({"case_id": str(r.case_id), "expectation": _expected(r, ttype), "n_inputs": len(r.inputs),
                       "n_failing": int(counts[i]), "failing": [int(m) for m in np.flatnonzero(failed.loc[i])],
                       "inputs": inputs})
        examples[func] = ex
    return funcs, examples


#: what a terminal acts on instead of showing: C0 and C1 control characters (ANSI escape sequences start with
#: \x1b or \x9b), DEL, the bidirectional embeddings / overrides / isolates and the line / paragraph separators
_TERMINAL_ACTIVE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
#: Markdown's inline syntax (backslash-escaped); & < > become entities (no raw HTML, no autolinks)
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]|~#!])")


def terminal_safe(text) -> str:
    """``text`` with every character a terminal would act on written as its escape, as repr does
    (``\\x1b``, ``\\x85``, ``\\u202e``): suite text cannot move the cursor, recolour or rewrite the screen."""
    return _TERMINAL_ACTIVE.sub(lambda m: repr(m.group())[1:-1], str(text))


def _plain(text) -> str:
    """Suite text on one line (whitespace runs, line breaks included, become one space), controls escaped."""
    return terminal_safe(" ".join(str(text).split()))


def markdown_safe(text) -> str:
    """Suite text as literal Markdown: one line, control characters escaped as in the terminal, ``& < >`` as
    entities (raw HTML stays text), inline syntax backslash-escaped and a leading list marker neutralised."""
    s = _plain(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MARKDOWN_ACTIVE.sub(r"\\\1", s)
    if s[:1] in ("-", "+"):
        s = "\\" + s
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", s)


def markdown_code(text) -> str:
    """Suite text as a Markdown code span (a fence longer than any run of backticks inside it)."""
    s = _plain(text)
    fence = "`" * (max((len(m) for m in re.findall("`+", s)), default=0) + 1)
    pad = " " if not s or s[0] == "`" or s[-1] == "`" else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def summary_text(funcs: pd.DataFrame, examples: dict, title: str, width: int = 100,
                 models: list[str] | None = None) -> str:
    """The terminal summary: per class and functionality the failure rate, then failing cases (≤ width columns).
    Suite text is shown with its control characters escaped (:func:`terminal_safe`). ``models`` (two or more:
    ``funcs`` / ``examples`` from :func:`failure_summary_models`): the summary over those models."""
    if models is not None and len(models) > 1:
        return _summary_text_models(funcs, examples, title, models, width)
    t = _plain
    title = t(title)
    lines = [title, "=" * min(width, len(title))]
    for cap, g in funcs.groupby("capability", sort=False):
        lines += ["", t(cap)]
        for r in g.itertuples(index=False):
            rate = "   –  " if pd.isna(r.failure_rate) else f"{100 * r.failure_rate:5.1f}%"
            name = _short(t(r.functionality), width - 36)
            lines.append(f"  {name:<{width - 36}} {t(r.test_type):<4} fail {rate}  ({r.n_failed}/{r.n_scored})")
            for ex in examples.get(r.functionality, []):
                lines.append(f"      ✗ {_short(t(ex['expectation']), width - 8)}")
                for inp in ex["inputs"]:
                    pred = t(inp["prediction"])
                    lines.append(f"        {_short(t(inp['input']), width - 12 - len(pred))}  → {pred}")
    return "\n".join(line[:width] for line in lines) + "\n"


def summary_markdown(funcs: pd.DataFrame, examples: dict, title: str, models: list[str] | None = None) -> str:
    """The summary as Markdown; suite text is literal (:func:`markdown_safe`, case ids as code spans).
    ``models`` (two or more): the summary over those models (:func:`failure_summary_models`)."""
    if models is not None and len(models) > 1:
        return _summary_markdown_models(funcs, examples, title, models)
    esc = markdown_safe
    lines = [f"# {esc(title)}", "", "| class | functionality | type | failure rate | failed / scored |",
             "|---|---|---|---:|---:|"]
    for r in funcs.itertuples(index=False):
        rate = "–" if pd.isna(r.failure_rate) else f"{100 * r.failure_rate:.1f}%"
        lines.append(f"| {esc(r.capability)} | {esc(r.functionality)} | {esc(r.test_type)} | {rate} | "
                     f"{r.n_failed} / {r.n_scored} |")
    for func, exs in examples.items():
        if not exs:
            continue
        lines += ["", f"## {esc(func)}"]
        for ex in exs:
            lines += ["", f"- {markdown_code(ex['case_id'])} — expected: {esc(ex['expectation'])}"]
            lines += [f"  - {esc(i['input'])} → **{esc(i['prediction'])}**" for i in ex["inputs"]]
    return "\n".join(lines) + "\n"


def summary_html(funcs: pd.DataFrame, examples: dict, title: str, models: list[str] | None = None) -> str:
    """A standalone page: the failure-rate table and, per functionality, a
    collapsible list of failing cases (no scripts, no external resources).
    ``models`` (two or more): the page over those models (:func:`failure_summary_models`)."""
    if models is not None and len(models) > 1:
        return _summary_html_models(funcs, examples, title, models)

    rows = []
    for r in funcs.itertuples(index=False):
        rate = "–" if pd.isna(r.failure_rate) else f"{100 * r.failure_rate:.1f}%"
        width = 0 if pd.isna(r.failure_rate) else round(100 * r.failure_rate)
        rows.append(f"<tr><td>{e(str(r.capability))}</td><td>{e(str(r.functionality))}</td>"
                    f"<td>{e(str(r.test_type))}</td>"
                    f"<td class='num'><span class='bar' style='width:{width}px'></span> {rate}</td>"
                    f"<td class='num'>{r.n_failed} / {r.n_scored}</td></tr>")
    details = []
    for func, exs in examples.items():
        if not exs:
            continue
        items = []
        for ex in exs:
            inputs = "".join(f"<tr><td>{e(i['input'])}</td><td class='pred'>{e(i['prediction'])}</td></tr>"
                             for i in ex["inputs"])
            items.append(f"<div class='case'><div><code>{e(ex['case_id'])}</code> expected: "
                         f"<b>{e(ex['expectation'])}</b> ({ex['n_inputs']} inputs)</div>"
                         f"<table class='inputs'>{inputs}</table></div>")
        opened = " open" if not details else ""    # the first one open: failures are visible on arrival
        details.append(f"<details{opened}><summary>{e(func)} — {len(exs)} failing case(s) shown</summary>"
                       f"{''.join(items)}</details>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
             "td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left}.num{text-align:right}"
             ".bar{display:inline-block;height:8px;background:#c0392b}.case{margin:.6em 0 .6em 1em}"
             ".pred{color:#c0392b;white-space:nowrap}summary{cursor:pointer;margin:.3em 0}")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{style}</style></head><body><h1>{e(title)}</h1>"
            "<table id='functionalities'><thead><tr><th>class</th><th>functionality</th><th>type</th>"
            f"<th>failure rate</th><th>failed / scored</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<h2>Failing cases</h2><div id='failures'>{''.join(details)}</div></body></html>\n")


# ---------------------------------------------------------------- the summary over several models

_SUMMARY_STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
                  "td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left}.num{text-align:right}"
                  ".bar{display:inline-block;height:8px;background:#c0392b}.case{margin:.6em 0 .6em 1em}"
                  ".pred{color:#c0392b;white-space:nowrap}summary{cursor:pointer;margin:.3em 0}")


def _percent(x) -> str:
    return "–" if pd.isna(x) else f"{100 * x:.1f}%"


def _mean_sd(r: dict) -> str:
    """``"66.7 ± 57.7%"`` (the mean alone with one model scored; ``–`` with none)."""
    from beluga.seeds import plus_minus

    return "–" if pd.isna(r["failure_rate"]) else plus_minus(r["failure_rate"], r["failure_rate_sd"]) + "%"


def _min_max(r: dict) -> str:
    lo, hi = r["failure_rate_min"], r["failure_rate_max"]
    return "–" if pd.isna(lo) else f"{100 * lo:.1f}–{100 * hi:.1f}%"


def _fails_for(ex: dict, labels: list[str]) -> str:
    return (f"fails for {ex['n_failing']} of {len(labels)} models "
            f"({', '.join(labels[i] for i in ex['failing'])})")


def _tail(text: str, n: int) -> str:
    """``text`` shortened to its last ``n`` characters (a path's distinctive end)."""
    return text if len(text) <= n else "…" + text[-(n - 1):]


def _summary_text_models(funcs: pd.DataFrame, examples: dict, title: str, models: list[str], width: int) -> str:
    t = _plain
    title = t(title)
    labels = model_labels(len(models))
    lines = [title, "=" * min(width, len(title)), f"failure rate: mean ± sd over {len(models)} models (min–max)"]
    lines += [f"  {lab}  {_tail(t(m), width - 4 - len(lab))}" for lab, m in zip(labels, models)]
    name_width = width - 41
    for cap, g in funcs.groupby("capability", sort=False):
        lines += ["", t(cap)]
        for r in g.to_dict("records"):
            mean = "–" if pd.isna(r["failure_rate"]) else (
                f"{100 * r['failure_rate']:5.1f}%" if pd.isna(r["failure_rate_sd"])
                else f"{100 * r['failure_rate']:5.1f} ± {100 * r['failure_rate_sd']:4.1f}%")
            spread = "" if pd.isna(r["failure_rate_min"]) else (
                f"({100 * r['failure_rate_min']:.1f}–{100 * r['failure_rate_max']:.1f})")
            name = _short(t(r["functionality"]), name_width)
            lines.append(f"  {name:<{name_width}} {t(r['test_type']):<4} fail {mean:>13}  {spread}".rstrip())
            for ex in examples.get(r["functionality"], []):
                fails = _fails_for(ex, labels)
                lines.append(f"      ✗ {_short(t(ex['expectation']), max(20, width - 12 - len(fails)))} — {fails}")
                first = ex["failing"][0]
                for inp in ex["inputs"]:
                    pred = f"{t(inp['predictions'][first])} ({labels[first]})"
                    lines.append(f"        {_short(t(inp['input']), max(10, width - 12 - len(pred)))}  → {pred}")
    return "\n".join(line[:width] for line in lines) + "\n"


def _summary_markdown_models(funcs: pd.DataFrame, examples: dict, title: str, models: list[str]) -> str:
    esc = markdown_safe
    labels = model_labels(len(models))
    named = ", ".join(f"{lab} {markdown_code(m)}" for lab, m in zip(labels, models))
    lines = [f"# {esc(title)}", "",
             f"Failure rate: mean ± sd over {len(models)} models ({named}); min–max and each model's rate "
             "beside it; failed / scored summed over the models.", "",
             "| class | functionality | type | failure rate (mean ± sd) | min–max | " + " | ".join(labels)
             + " | failed / scored |",
             "|---|---|---|---:|---:|" + "---:|" * len(models) + "---:|"]
    for r in funcs.to_dict("records"):
        each = " | ".join(_percent(r[model_rate_column(m)]) for m in models)
        lines.append(f"| {esc(r['capability'])} | {esc(r['functionality'])} | {esc(r['test_type'])} | {_mean_sd(r)} "
                     f"| {_min_max(r)} | {each} | {r['n_failed']} / {r['n_scored']} |")
    for func, exs in examples.items():
        if not exs:
            continue
        lines += ["", f"## {esc(func)}"]
        for ex in exs:
            lines += ["", f"- {markdown_code(ex['case_id'])} — expected: {esc(ex['expectation'])} — "
                          f"{_fails_for(ex, labels)}"]
            lines += ["  - " + esc(i["input"]) + " → "
                      + " · ".join(f"{lab} **{esc(p)}**" for lab, p in zip(labels, i["predictions"]))
                      for i in ex["inputs"]]
    return "\n".join(lines) + "\n"


def _summary_html_models(funcs: pd.DataFrame, examples: dict, title: str, models: list[str]) -> str:
    labels = model_labels(len(models))
    rows = []
    for r in funcs.to_dict("records"):
        width = 0 if pd.isna(r["failure_rate"]) else round(100 * r["failure_rate"])
        each = "".join(f"<td class='num'>{_percent(r[model_rate_column(m)])}</td>" for m in models)
        rows.append(f"<tr><td>{e(str(r['capability']))}</td><td>{e(str(r['functionality']))}</td>"
                    f"<td>{e(str(r['test_type']))}</td>"
                    f"<td class='num'><span class='bar' style='width:{width}px'></span> {_mean_sd(r)}</td>"
                    f"<td class='num'>{_min_max(r)}</td>{each}"
                    f"<td class='num'>{r['n_failed']} / {r['n_scored']}</td></tr>")
    heads = "".join(f"<th title='{e(m)}'>{lab}</th>" for lab, m in zip(labels, models))
    details = []
    for func, exs in examples.items():
        if not exs:
            continue
        items = []
        for ex in exs:
            fails, red = set(ex["failing"]), " class='pred'"
            inputs = "".join(f"<tr><td>{e(i['input'])}</td>"
                             + "".join(f"<td{red if k in fails else ''}>{e(p)}</td>"
                                       for k, p in enumerate(i["predictions"])) + "</tr>"
                             for i in ex["inputs"])
            items.append(f"<div class='case'><div><code>{e(ex['case_id'])}</code> expected: "
                         f"<b>{e(ex['expectation'])}</b> ({ex['n_inputs']} inputs) — {e(_fails_for(ex, labels))}</div>"
                         f"<table class='inputs'><tr><th>input</th>{heads}</tr>{inputs}</table></div>")
        opened = " open" if not details else ""    # the first one open: failures are visible on arrival
        details.append(f"<details{opened}><summary>{e(func)} — {len(exs)} failing case(s) shown, those failing for "
                       f"the most models first</summary>{''.join(items)}</details>")
    named = ", ".join(f"{lab} <code>{e(m)}</code>" for lab, m in zip(labels, models))
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{_SUMMARY_STYLE}</style></head><body><h1>{e(title)}</h1>"
            f"<p id='models'>Failure rate: mean ± sd over {len(models)} models ({named}); min–max and each "
            "model's rate beside it; failed / scored summed over the models.</p>"
            "<table id='functionalities'><thead><tr><th>class</th><th>functionality</th><th>type</th>"
            f"<th>failure rate (mean ± sd)</th><th>min–max</th>{heads}<th>failed / scored</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            f"<h2>Failing cases</h2><div id='failures'>{''.join(details)}</div></body></html>\n")


# ---------------------------------------------------------------- failures in the pipeline's report


SCENARIO_ORDER = ("standard", "seen", "func", "class", "type")


def pipeline_failures(suite_test: pd.DataFrame, runs: list[dict], ttype, k: int = 3) -> pd.DataFrame:
    """Failing T_test cases of every model, per functionality: the IID model
    (scenario standard), each pair's seen model, and for func / class / type
    the fold model that held the functionality out. ``runs``: dicts with
    configuration, method, partition, fold, ``outcomes`` and ``predictions``
    (DataFrames). One row per shown input."""
    rows = []
    for run in runs:
        out = run["outcomes"]
        held = out[(out["split"] == "suite_test") & out["held_out"].astype(bool)]
        if not len(held):
            continue
        cases = suite_test[suite_test["case_id"].isin(set(held["case_id"]))]
        preds = run["predictions"]
        preds = preds[preds["split"] == "suite_test"]
        _, examples = failure_summary(cases, held[["case_id", "status"]], preds, ttype, k=k)
        scenario = "standard" if run["configuration"] == "iid" else run["partition"]
        for func, exs in examples.items():
            for ex in exs:
                for j, inp in enumerate(ex["inputs"]):
                    rows.append({"scenario": scenario, "configuration": run["configuration"],
                                 "method": run["method"], "fold": run["fold"], "functionality": func,
                                 "case_id": ex["case_id"], "expectation": ex["expectation"], "input_idx": j,
                                 "input": inp["input"], "prediction": inp["prediction"]})
    cols = ["scenario", "configuration", "method", "fold", "functionality", "case_id", "expectation", "input_idx",
            "input", "prediction"]
    df = pd.DataFrame(rows, columns=cols)
    if len(df):
        df["_s"] = df["scenario"].map({s: i for i, s in enumerate(SCENARIO_ORDER)})
        df = df.sort_values(["_s"], kind="stable").drop(columns="_s").reset_index(drop=True)
    return df


def failures_markdown(df: pd.DataFrame, task: str) -> str:
    """The pipeline's failing cases (:func:`pipeline_failures`) as one Markdown table; suite text is literal
    (:func:`markdown_safe`: a "|" is escaped, raw HTML stays text)."""
    esc = markdown_safe
    md = [f"# {esc(task.upper())}: failing T_test cases", "",
          "| scenario | model | functionality | case | expected | input | prediction |",
          "|---|---|---|---|---|---|---|"]
    md += [f"| {esc(r.scenario)} | {esc(f'{r.configuration}/{r.method}/{r.fold}')} | {esc(r.functionality)} | "
           f"{esc(r.case_id)} | {esc(r.expectation)} | {esc(r.input)} | {esc(r.prediction)} |"
           for r in df.itertuples(index=False)]
    return "\n".join(md) + "\n"


def failures_html(df: pd.DataFrame, funcs: pd.DataFrame, task: str, labels: dict) -> str:
    """A standalone page: one collapsible section per functionality, inside it
    the failing cases of each model (scenario, configuration, method, fold)."""

    parts, opened = [], False
    for r in funcs.itertuples(index=False):
        sub = df[df["functionality"] == r.functionality]
        if not len(sub):
            parts.append(f"<details><summary>{e(str(r.functionality))} ({e(str(r.test_type))}) — no failing case"
                         "</summary></details>")
            continue
        blocks = []
        for (sc, conf, meth, fold), g in sub.groupby(["scenario", "configuration", "method", "fold"], sort=False):
            who = "IID model" if conf == "iid" else f"{labels.get(conf, conf)} {meth}, {sc} ({fold})"
            cases = []
            for cid, c in g.groupby("case_id", sort=False):
                trs = "".join(f"<tr><td>{e(str(x.input))}</td><td class='pred'>{e(str(x.prediction))}</td></tr>"
                              for x in c.itertuples(index=False))
                cases.append(f"<div class='case'><code>{e(str(cid))}</code> expected: "
                             f"<b>{e(str(c['expectation'].iat[0]))}</b><table class='inputs'>{trs}</table></div>")
            blocks.append(f"<h4>{e(who)}</h4>{''.join(cases)}")
        n_models = sub.groupby(["scenario", "configuration", "method", "fold"]).ngroups
        attr = "" if opened else " open"          # the first one open: failures are visible on arrival
        opened = True
        parts.append(f"<details{attr}><summary>{e(str(r.functionality))} ({e(str(r.test_type))}) — failing cases of "
                     f"{n_models} model(s)</summary>{''.join(blocks)}</details>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1100px}td{border-bottom:1px solid #ddd;"
             "padding:2px 8px}.case{margin:.5em 0 .5em 1em}.pred{color:#c0392b;white-space:nowrap}"
             "summary{cursor:pointer;margin:.3em 0}h4{margin:.6em 0 .2em}")
    title = f"{task.upper()}: failing T_test cases per functionality"
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title><style>{style}"
            f"</style></head><body><h1>{e(title)}</h1><p>The IID model, each configuration–method pair's seen "
            "model, and in func / class / type the fold model that held the functionality out; a few failing "
            f"cases each, with every shown input and the model's prediction.</p><div id='failures'>{''.join(parts)}"
            "</div></body></html>\n")
