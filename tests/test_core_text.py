"""beluga.core.text: where a string that is not Unicode text (a lone surrogate) sits in a value, a table column
and an Arrow table (the readers' one-line errors: tests/test_bad_inputs*.py)."""

import numpy as np
import pyarrow as pa
import pytest

from beluga.core.text import SURROGATE_ESCAPE, arrow_not_utf8, column_not_text, is_text, not_text, shown


def test_is_text_and_the_field_of_the_first_lone_surrogate():
    assert is_text("plain") and is_text("naïve — ✓") and not is_text("a\ud800") and not is_text("\udfff")
    assert not_text({"inputs": [["a", "b"], ["c", "d\ud800"]], "meta": {"x": "\udc00"}}) == "inputs[1][1]"
    assert not_text({"meta": {"na\udfffme": 1}}) == "meta.na\\udfffme"     # a key, named by its escape
    assert not_text(np.array(["x", "y\udc80"], dtype=object), "answers") == "answers[1]"
    assert not_text("a\ud800") == "value" and not_text({"a": ["fine", 3, None]}) is None
    assert shown("é\ud800") == "é\\ud800" and shown("é") == "é"
    assert SURROGATE_ESCAPE.search('{"a": "\\uDBFF"}') and not SURROGATE_ESCAPE.search('{"a": "\\u00e9"}')


@pytest.mark.parametrize("values,found", [
    (["a", "b", "é"], None),
    (["a", None, 3, "b\ud800"], (3, "")),
    ([["a", "b"], ["c", "\udc00"]], (1, "[1]")),
    ([np.array(["x"], dtype=object), np.array(["y", "z\ud9ff"], dtype=object)], (1, "[1]")),
    ([["a", 1], ["b", ["c\ud800"]]], (1, "[1][0]")),       # a list holding other values: walked cell by cell
    ([None, {"k": "v\ud800"}], (1, ".k")),
])
def test_column_not_text(values, found):
    assert column_not_text(values) == found


def _strings(values: list[bytes]) -> pa.Array:
    raw = pa.array(values, type=pa.binary())
    return pa.Array.from_buffers(pa.string(), len(values), raw.buffers())   # no UTF-8 check, as a file may hold


def test_arrow_not_utf8_names_the_row_and_the_item():
    ok = pa.table({"a": ["x", "y", "z"]})
    assert arrow_not_utf8(ok) is None
    t = pa.table({"a": ["x", "y", "z"], "b": _strings([b"ok", b"ok", b"b\xed\xa0\x80"])})
    row, field, why = arrow_not_utf8(t)
    assert (row, field) == (2, "b") and "a lone surrogate (U+D800, bytes ed a0 80 at byte 1)" in why
    inner = _strings([b"a", b"b", b"c", b"\xff"])
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 3, 4], pa.int32()), inner)   # [a], [b, c], [\xff]
    row, field, why = arrow_not_utf8(pa.table({"inputs": lists}))
    assert (row, field) == (2, "inputs[0]") and why == "not UTF-8 text (byte 0xff at byte 0)"
    chunked = pa.table({"inputs": pa.chunked_array([lists.slice(0, 2), lists.slice(2)])})
    assert arrow_not_utf8(chunked)[:2] == (2, "inputs[0]")   # rows counted over the chunks
