"""The classification head: a sequence classifier whose predictions are class probabilities (SENT, PARA, NLI,
NLI_BINARY, ACCEPTABILITY, SIMILARITY_CLASSES), and the classification metrics (accuracy, F1 of class 1,
Matthews correlation)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from beluga.core.bounds import json_loads
from beluga.core.errors import BelugaError, DataError, ModelError
from beluga.core.health import check_probabilities
from beluga.core.tasks import TaskType, binary_to_three_class
from beluga.heads.base import DEGENERATE_SHARE, Head, sequence_forward, share_text
from beluga.heads.score.correlation import correlation
from beluga.train.selection import NOT_NEGATIVE, REFERENCE_TOL, mean_or_none


def positive_f1(pred, gold, positive: int = 1) -> float:
    """F1 of the ``positive`` class (PARA: duplicate)."""
    pred, gold = np.asarray(pred), np.asarray(gold)
    tp = int(((pred == positive) & (gold == positive)).sum())
    fp = int(((pred == positive) & (gold != positive)).sum())
    fn = int(((pred != positive) & (gold == positive)).sum())
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def mcc_from_counts(tp, fp, fn, tn):
    """Matthews correlation (tp tn - fp fn) / sqrt((tp + fp)(tp + fn)(tn + fp)(tn + fn)) of a two-class
    confusion table, element-wise (counts or their shares alike: the ratio does not depend on the scale);
    0 where a margin is empty (a constant prediction or gold: sklearn's and GLUE's convention)."""
    tp, fp, fn, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn))
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, (tp * tn - fp * fn) / np.sqrt(np.where(den > 0, den, 1.0)), 0.0)
    return np.where(np.isnan(den), np.nan, out)


def mcc(pred, gold, positive: int = 1) -> float:
    """Matthews correlation of two-class predictions (:func:`mcc_from_counts`; symmetric in the classes:
    ``positive`` only names one of them)."""
    pred, gold = np.asarray(pred) == positive, np.asarray(gold) == positive
    return float(mcc_from_counts((pred & gold).sum(), (pred & ~gold).sum(), (~pred & gold).sum(),
                                 (~pred & ~gold).sum()))


def probs_matrix(values, source: str) -> np.ndarray:
    """A predictions column of class probabilities as a checked (n, k) matrix."""
    try:
        rows = [np.asarray(v, dtype=np.float64) for v in values]
        out = np.stack(rows) if rows else np.zeros((0, 0))
    except (TypeError, ValueError) as e:
        raise DataError(f"{source}: field 'probs': every row needs a list of class probabilities "
                        f"of the same length ({e})") from None
    if out.ndim != 2:
        raise DataError(f"{source}: field 'probs': every row needs a list of class probabilities")
    if len(out):
        check_probabilities(out, source)
    return out


def label_shares(labels: list[int], names: dict[int, str]) -> dict[str, float]:
    """Share of each label name (every name of the label set, extra classes appended as ``class_<k>``); NaN
    shares when there is nothing to count."""
    counts = Counter(labels)
    keys = list(names) + sorted(k for k in counts if k not in names)
    n = len(labels)
    return {names.get(k, f"class_{k}"): (counts.get(k, 0) / n if n else float("nan")) for k in keys}


def majority(shares: dict[str, float]) -> tuple[str | None, float]:
    """(the most frequent name, its share) of :func:`label_shares` (the first wins ties)."""
    valid = {k: v for k, v in shares.items() if not math.isnan(v)}
    if not valid:
        return None, float("nan")
    name = max(valid, key=lambda k: valid[k])
    return name, float(valid[name])


#: a classifier whose every class probability varies by less than this over its inputs is a constant predictor
#: (whichever class its argmax gives: a constant near a class boundary splits the inputs between two classes)
PROBABILITY_SPREAD = 0.02


def constant_classes(ttype, probs: np.ndarray, share: float = DEGENERATE_SHARE,
                     spread: float = PROBABILITY_SPREAD) -> dict | None:
    """A (near-)constant classifier over its inputs' probabilities ``probs`` (n, the model's classes), else None:
    the class the expectations see (:meth:`beluga.core.tasks.TaskType.suite_probs`) is one class for at least
    ``share`` of the inputs -- the suite share the diagnostics flag (:meth:`Classification.diagnostics`) -- or
    every class's probability varies by less than ``spread``. ``text``: that class, its share and the model's own
    most predicted class's probability, mean ± sd (``neutral for all 40 inputs (P(positive) 0.52 ± 0.00)``)."""
    probs = np.asarray(probs, dtype=np.float64)
    if not len(probs):
        return None
    name, top = majority(label_shares(ttype.suite_probs(probs).argmax(1).tolist(), ttype.suite_labels))
    widest = float((probs.max(0) - probs.min(0)).max())
    if top < share and widest >= spread:
        return None
    own = int(np.bincount(probs.argmax(1), minlength=probs.shape[1]).argmax())
    names = ttype.iid_labels if probs.shape[1] == len(ttype.iid_labels) else ttype.suite_labels
    cls = names.get(own, f"class_{own}")
    mean, sd = float(probs[:, own].mean()), float(probs[:, own].std())
    return {"prediction": name, "share": float(top), "n_inputs": len(probs),
            "probability": {"class": cls, "mean": mean, "sd": sd}, "probability_spread": widest,
            "text": f"{name} for {share_text(top, len(probs))} (P({cls}) {mean:.2f} ± {sd:.2f})"}


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def as_int(v) -> int | None:
    """A value as an integer (None when missing, not a number, or not whole)."""
    if v is None or isinstance(v, (bool, str, bytes)) or (isinstance(v, float) and math.isnan(v)):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else None


# ---------------------------------------------------------------- the reference selection objective
def _sent_label(ttype: TaskType, expect: str, label):
    """The reference code's MFT label of a SENT input: 0 / 1 / 2, or
    ``not_0`` for the soft target [1/3, 2/3] (``soft_to_label``)."""
    target = ttype.mft_target(expect, label)
    if np.allclose(target, [1 / 3, 2 / 3]):
        return NOT_NEGATIVE
    return {(1.0, 0.0): 0, (0.5, 0.5): 1, (0.0, 1.0): 2}[tuple(float(t) for t in target)]


def binary_f1(pred, gold) -> float:
    """F1 of class 1 (sklearn's ``f1_score``, as the GLUE QQP metric: 0 when
    there is no true positive): :func:`positive_f1`."""
    return positive_f1(np.asarray(pred, dtype=int), np.asarray(gold, dtype=int))


def _probs_of(preds, source: str, k: int = 2):
    index = {(c, int(j)): p for c, j, p in zip(preds["case_id"], preds["input_idx"], preds["probs"])}

    def get(case_id, j) -> np.ndarray:
        p = index.get((case_id, j))
        if p is None:
            raise BelugaError(f"{source}: field 'input_idx': no prediction for case {case_id!r}, input {j}")
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (k,):
            raise BelugaError(f"{source}: field 'probs': the reference objective needs the model's "
                              f"{ {2: 'two', 3: 'three'}.get(k, k)}-class probabilities, case {case_id!r} input {j} "
                              f"has {p.shape}")
        return p
    return get


def _pairs(plan_rows, get, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(originals' probabilities, perturbations' probabilities), one row per pair."""
    if not plan_rows:
        return np.zeros((0, k)), np.zeros((0, k))
    return (np.stack([get(c, 0) for c, j, *_ in plan_rows]), np.stack([get(c, j) for c, j, *_ in plan_rows]))


def classification_parts(ttype: TaskType, plan: dict[str, list[tuple]], preds, source: str = "T_val") -> dict:
    """The SENT / PARA / NLI / ACCEPTABILITY metrics of the reference objective from the model's
    probabilities (``preds``: case_id, input_idx, probs), with their counts."""
    import torch

    from beluga.train.losses import dir_error

    if ttype.name not in ("sent", "para"):
        return _labelled_parts(plan, _probs_of(preds, source, ttype.num_model_labels), ttype.num_model_labels)
    get = _probs_of(preds, source)
    p0, pi = _pairs(plan["inv"], get)
    parts: dict = {"n_mft": len(plan["mft"]), "n_inv": len(plan["inv"]), "n_dir": len(plan["dir"]),
                   "inv_pass": mean_or_none(np.abs(pi[:, 1] - p0[:, 1]) <= REFERENCE_TOL)}
    mft_probs = np.stack([get(c, j) for c, j, _ in plan["mft"]]) if plan["mft"] else np.zeros((0, 2))
    mft_gold = [y for _, _, y in plan["mft"]]
    if ttype.name == "sent":
        pred3 = binary_to_three_class(mft_probs[:, 1]).argmax(-1) if len(mft_probs) else []
        parts["mft_accuracy"] = mean_or_none([p in (1, 2) if y == NOT_NEGATIVE else p == y
                                              for p, y in zip(pred3, mft_gold)])
        d0, di = _pairs(plan["dir"], get)
        fn = torch.tensor([f for _, _, f in plan["dir"]], dtype=torch.long)
        errors = dir_error(torch.from_numpy(d0), torch.from_numpy(di), fn).numpy() if len(fn) else []
        parts["dir_pass"] = mean_or_none(np.asarray(errors) <= REFERENCE_TOL)
        return parts
    for part, probs, gold in (("mft", mft_probs, mft_gold),
                              ("dir", np.stack([get(c, j) for c, j, _ in plan["dir"]]) if plan["dir"]
                               else np.zeros((0, 2)), [y for _, _, y in plan["dir"]])):
        pred = probs.argmax(-1) if len(probs) else np.zeros(0, dtype=int)
        parts[f"{part}_accuracy"] = mean_or_none(pred == np.asarray(gold, dtype=int))
        parts[f"{part}_f1"] = binary_f1(pred, gold) if len(gold) else None
    return parts


def _labelled_parts(plan: dict[str, list[tuple]], get, k: int) -> dict:
    """NLI / NLI_BINARY / ACCEPTABILITY: MFT and DIR accuracy (argmax over the model's ``k`` classes) and
    the INV pass rate (max over classes of |ΔP| <= :data:`REFERENCE_TOL`, PARA's test for two classes)."""
    p0, pi = _pairs(plan["inv"], get, k)
    parts: dict = {"n_mft": len(plan["mft"]), "n_inv": len(plan["inv"]), "n_dir": len(plan["dir"]),
                   "inv_pass": mean_or_none(np.abs(pi - p0).max(axis=1) <= REFERENCE_TOL) if len(p0) else None}
    for part in ("mft", "dir"):
        rows = plan[part]
        probs = np.stack([get(c, j) for c, j, _ in rows]) if rows else np.zeros((0, k))
        parts[f"{part}_accuracy"] = mean_or_none(probs.argmax(-1) == np.asarray([y for *_, y in rows], dtype=int)) \
            if rows else None
    return parts


def classification_plan(ttype, cases, eq_or_not_negative_target: str = "not_negative") -> dict[str, list[tuple]]:
    """What each term of the reference objective reads from the ``cases``
    (T_val), by test type: ``mft`` (case_id, input_idx, label: SENT 0 / 1 / 2
    / ``not_0``, PARA 0 / 1), ``inv`` (case_id, the perturbation's
    input_idx; the original is input 0), ``dir`` (SENT: case_id, input_idx,
    DIR function index; PARA: case_id, input_idx, label). Cases are assigned as training assigns them
    (``beluga.train.batches``), SENT's "Q & A: no" label 1 scored as it is trained
    (``eq_or_not_negative_target``: ``label``, the reference's, is neutral:
    only a neutral prediction is a hit); a case no reference metric covers
    stops here with its id, before anything is trained."""
    from beluga.train.batches import mft_inputs, trained_as_mft
    from beluga.train.losses import DIR_FN_INDEX, dir_function_for

    plan: dict[str, list[tuple]] = {"mft": [], "inv": [], "dir": []}
    for r in cases.itertuples(index=False):
        params = json_loads(r.expect_params) if r.expect_params else {}
        n = len(r.inputs)
        where = f"objective 'reference': T_val case {r.case_id!r}"
        if trained_as_mft(r, params):
            expect, labelled = mft_inputs(r, params, eq_or_not_negative_target)   # as beluga.train.batches trains it
            is_mft = r.test_type == "MFT" or (params.get("train") or {}).get("as") == "MFT"
            if ttype.name == "sent":
                if not is_mft:
                    raise BelugaError(f"{where}: field 'expect': SENT has no reference metric for a label-checked "
                                      f"{r.test_type}")
                plan["mft"].extend((r.case_id, j, _sent_label(ttype, expect, y)) for j, y in labelled)
            elif is_mft or r.test_type == "DIR":
                rows = [(r.case_id, j, int(np.argmax(ttype.mft_target(expect, y)))) for j, y in labelled]
                plan["mft" if is_mft else "dir"].extend(rows)
            else:
                raise BelugaError(f"{where}: field 'expect': {ttype.name.upper()} has no reference metric for a "
                                  f"label-checked {r.test_type}")
        elif r.test_type == "INV":
            plan["inv"].extend((r.case_id, j) for j in range(1, n))
        elif r.test_type == "DIR" and ttype.name == "sent":
            try:
                fn = DIR_FN_INDEX[dir_function_for(r.expect, params)]
            except ValueError as e:
                raise BelugaError(f"{where}: field 'expect': {e}") from None
            plan["dir"].extend((r.case_id, j, fn) for j in range(1, n))
        else:
            raise BelugaError(f"{where}: field 'expect': {ttype.name.upper()} has no reference metric for a "
                              f"{r.test_type} with expectation {r.expect!r}")
    return plan


class Classification(Head):
    name = "classification"
    auto_class = "AutoModelForSequenceClassification"
    words = "a sequence classification head"
    predicts = "classes"
    pipeline_tag = "text-classification"
    value_column = "probs"
    has_classes = True

    def expectations(self) -> tuple[str, ...]:
        from beluga.score.expectations import EXPECT_FNS

        return tuple(EXPECT_FNS)

    def spec_label(self, ttype, value, fail) -> int | None:
        labels = ttype.suite_labels
        shown = ", ".join(f"{k} {v}" for k, v in labels.items())
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            fail(f"{value!r} is not a label")
        if isinstance(value, int):
            if value not in labels:
                fail(f"{value} is not a label of task {ttype.name!r} ({shown})")
            return value
        by_name = {v.replace(" ", "_"): k for k, v in labels.items()}
        key = value.strip().replace(" ", "_")
        if key not in by_name:
            fail(f"{value!r} is not a label of task {ttype.name!r} ({shown})")
        return by_name[key]

    def prediction_text(self, value, ttype) -> str:
        probs = np.asarray(value, dtype=float)
        suite = ttype.suite_probs(probs[None, :])[0]      # what the expectation sees (SENT: three classes)
        k = int(suite.argmax())
        shown = f"{ttype.suite_labels.get(k, str(k))} (p = {suite[k]:.2f})"
        if len(probs) != len(suite):   # the model's own classes too
            j = int(probs.argmax())
            shown += f"; model: {ttype.iid_labels.get(j, str(j))} (p = {probs[j]:.2f})"
        return shown

    def gold_text(self, gold, ttype) -> str:
        names = sorted({ttype.suite_labels.get(int(x), str(x)) for x in gold if x is not None})
        return f"label {' / '.join(names)}"

    # -------------------------------------------------------------- the model
    def config_overrides(self, num_labels: int) -> dict:
        return {"num_labels": num_labels}

    def check_model(self, model, ttype, name: str) -> None:
        if ttype is None:
            return
        k = int(model.config.num_labels)
        try:
            ttype.suite_probs(np.full((1, k), 1.0 / max(k, 1)))
        except ValueError as e:
            first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
            raise ModelError(f"model {name}: field 'num_labels': the model has {k} classes (config.json), which "
                             f"task type {ttype.name!r} cannot read ({first})") from None

    def predict(self, model, tokenizer, texts, texts_b=None, batch_size: int = 64, max_length: int = 128,
                precision=None) -> np.ndarray:
        """Softmax probabilities (n, classes), in input order (softmax in float32)."""
        import torch

        from beluga.model.precision import FP32

        return sequence_forward(model, tokenizer, texts, texts_b, batch_size, max_length, precision or FP32,
                                int(model.config.num_labels), lambda logits: torch.softmax(logits, dim=-1))

    def outputs(self, model, tokenizer, texts, texts_b, batch_size, max_length, doc_stride, precision):
        use_b = any(b is not None for b in texts_b)
        probs = self.predict(model, tokenizer, texts, texts_b if use_b else None, batch_size, max_length, precision)
        return {"probs": [row.tolist() for row in probs]}

    def example_gold(self, examples):
        return examples["label"].astype(int).to_numpy()

    def check_predictions(self, df, where: str) -> None:
        if len(df):
            check_probabilities(np.array(df["probs"].tolist(), dtype=np.float64), f"predictions {where} (not written)",
                                keys=lambda i: (df["case_id"].iat[i], df["input_idx"].iat[i]))

    def prediction_schema(self):
        import pyarrow as pa

        return pa.schema([("split", pa.string()), ("case_id", pa.string()), ("input_idx", pa.int32()),
                          ("probs", pa.list_(pa.float32())), ("label", pa.int32())])

    # -------------------------------------------------------------- training
    def iid_items(self, ttype, iid_train) -> list:
        from beluga.train.items import TrainItem

        n = ttype.num_model_labels
        texts_b = iid_train["text_b"] if "text_b" in iid_train.columns else [None] * len(iid_train)
        return [TrainItem("iid", [t], None if b is None else [b], list(np.eye(n)[int(y)]))
                for t, b, y in zip(iid_train["text"], texts_b, iid_train["label"])]

    def case_items(self, ttype, r, options) -> tuple[str, list]:
        from beluga.train.batches import class_case_items

        return class_case_items(ttype, r, options.dir_train_slice, options.eq_or_not_negative_target,
                                options.batching)

    # -------------------------------------------------------------- scoring
    def score_cases(self, suite, predictions, ttype, source, on_cases, reasons):
        from beluga.score.expectations import score_checklist_cases

        def values_of(values, keys):
            try:
                probs_model = np.array([np.asarray(v, dtype=np.float64) for v in values], dtype=np.float64)
            except (TypeError, ValueError) as e:
                raise BelugaError(f"{source}: field 'probs': every row needs a list of class probabilities "
                                  f"of the same length ({e})") from None
            if not len(values):
                return [], []
            if probs_model.ndim != 2:
                raise BelugaError(f"{source}: field 'probs': every row needs a list of class probabilities")
            check_probabilities(probs_model, source, rows=keys[0], keys=keys[1])
            try:
                probs = ttype.suite_probs(probs_model)
            except ValueError as e:
                raise BelugaError(f"{source}: field 'probs': {e}") from None
            return probs.argmax(-1).tolist(), probs.tolist()

        return score_checklist_cases(suite, predictions, ttype, "probs", values_of, dict(ttype.suite_labels),
                                     source, on_cases, reasons)

    def example_outcomes(self, preds, gold, ids, source, collapse) -> dict:
        try:
            probs = np.array([np.asarray(p, dtype=np.float64) for p in preds["probs"]], dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise DataError(f"{source}: field 'probs': every row needs a list of class probabilities ({e})") from None
        if len(probs):
            check_probabilities(probs.reshape(len(probs), -1), source, rows=preds.index.to_numpy(),
                                keys=lambda i: (ids[i], 0))
        pred_label = probs.argmax(axis=1).astype(np.int64) if len(probs) else np.zeros(0, dtype=np.int64)
        if collapse is not None:
            from beluga.data.ood_collapse import collapse_predictions

            pred_label = collapse_predictions(pred_label, collapse, source)
        gold_label = gold.loc[ids, "label"].astype(int).to_numpy()
        return {"pred_label": pred_label, "gold_label": gold_label, "correct": pred_label == gold_label}

    def metric(self, name: str, rows) -> float:
        """accuracy, f1, mcc; and GLUE's STS-B ``pearson`` / ``spearman`` of a five-class similarity task's
        outcomes (``pred_score`` / ``gold_score``: ``beluga.score.outcomes.class_score_columns``), NaN where a
        gold score is missing (a table of classes) or a side is constant."""
        if name == "accuracy":
            return float(rows["correct"].astype(float).mean())
        if name in ("pearson", "spearman"):
            if "pred_score" not in rows.columns or "gold_score" not in rows.columns:
                raise ValueError(f"metric {name!r} needs the outcomes' pred_score / gold_score (a five-class "
                                 "similarity task's)")
            gold = rows["gold_score"].astype(float).to_numpy()
            if np.isnan(gold).any():
                return float("nan")
            return correlation(name, rows["pred_score"].astype(float).to_numpy(), gold)
        pred, gold = rows["pred_label"].astype(int), rows["gold_label"].astype(int)
        if name == "mcc":
            return mcc(pred, gold)
        if name == "f1":
            return positive_f1(pred, gold)
        raise ValueError(f"metric {name!r} is not a classification metric (accuracy, f1, mcc; pearson, spearman "
                         "of a five-class similarity task)")

    # -------------------------------------------------------------- model selection
    def objective_plan(self, ttype, cases, answer_match, eq_or_not_negative_target) -> dict:
        return classification_plan(ttype, cases, eq_or_not_negative_target)

    def objective_parts(self, ttype, plan, preds, source, predict_spans) -> dict:
        return classification_parts(ttype, plan, preds, source)

    # -------------------------------------------------------------- diagnostics
    def diagnostics(self, ttype, iid, suite, is_dir, source, whole_suite, degenerate_share):
        iid_probs = probs_matrix(iid["probs"], source)
        suite_probs = probs_matrix(suite["probs"], source)
        iid_pred = iid_probs.argmax(1).tolist() if len(iid_probs) else []
        if len(suite_probs):
            try:
                suite_pred = ttype.suite_probs(suite_probs).argmax(1).tolist()
            except ValueError as e:
                raise DataError(f"{source}: field 'probs': {e}") from None
        else:
            suite_pred = []
        gold_iid = [as_int(v) for v in iid["gold"]]
        if any(g is None for g in gold_iid):
            raise DataError("iid_test: field 'label': every i.i.d. test example needs an integer label")
        suite_gold = [int(g) for g in suite["gold"] if g is not None]
        shares = {
            "iid_pred_share": label_shares(iid_pred, ttype.iid_labels),
            "iid_gold_share": label_shares(gold_iid, ttype.iid_labels),
            "suite_pred_share": label_shares(suite_pred, ttype.suite_labels),
            "suite_gold_share": label_shares(suite_gold, ttype.suite_labels),
        }
        iid_maj, iid_share = majority(shares["iid_pred_share"])
        suite_maj, suite_share = majority(shares["suite_pred_share"])
        conf_suite = suite_probs.max(1) if len(suite_probs) else np.zeros(0)
        nan = float("nan")
        out = {"n_suite_gold": len(suite_gold), **shares,
               "iid_majority_label": iid_maj, "iid_majority_share": iid_share,
               "suite_majority_label": suite_maj, "suite_majority_share": suite_share,
               "iid_empty_share": nan, "suite_empty_share": nan,
               "confidence_iid": _mean(iid_probs.max(1)) if len(iid_probs) else nan,
               "confidence_suite": _mean(conf_suite),
               "confidence_dir": _mean(conf_suite[is_dir]) if is_dir.any() else nan}
        iid_deg = not math.isnan(iid_share) and iid_share >= degenerate_share
        suite_deg = whole_suite and not math.isnan(suite_share) and suite_share >= degenerate_share
        return out, iid_deg, suite_deg

    def constant_predictor(self, ttype, values, source, share=DEGENERATE_SHARE):
        """One class for (almost) every input, or probabilities that hardly vary (:func:`constant_classes`)."""
        probs = probs_matrix(values, source)
        try:
            return constant_classes(ttype, probs, share)
        except ValueError as e:   # a class count the task cannot read (checked where the predictions were read)
            raise DataError(f"{source}: field 'probs': {e}") from None
