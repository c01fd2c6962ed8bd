import json
import os

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


@pytest.fixture
def tiny_suite():
    return make_tiny_suite()
