"""The score head: a regression with one output (SIMILARITY: a score in [0, 5]), trained by squared error;
predictions are scores, the suite's expectations speak about scores (:mod:`beluga.heads.score.cases`), examples
are scored by Pearson / Spearman correlation, and a constant predictor is its degenerate solution."""

from __future__ import annotations

import numpy as np

from beluga.core.errors import DataError, ModelError
from beluga.heads.base import DEGENERATE_SHARE, Head, sequence_forward, share_text
from beluga.heads.score.correlation import REGRESSION_METRICS, correlation
from beluga.heads.score.diagnostics import CONSTANT_STD, constant_predictor, finite_scores, score_diagnostics


class Score(Head):
    name = "regression"
    auto_class = "AutoModelForSequenceClassification"   # a sequence classifier with one output
    words = "a regression head"
    predicts = "scores (a regression)"
    value_column = "score"
    inv_expectation = "score_inv"
    gold_is_score = True
    checklist_format = False

    def expectations(self) -> tuple[str, ...]:
        from beluga.heads.score.cases import SCORE_EXPECTATIONS

        return tuple(SCORE_EXPECTATIONS)

    def spec_label(self, ttype, value, fail) -> int | None:
        """A gold score: an integer in the task's range (the suite format's labels are integers)."""
        lo, hi = ttype.score_range
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            fail(f"{value!r} is not a score label of task {ttype.name!r} (an integer in {lo:g}..{hi:g}; for "
                 "another value give score_near's val)")
        return value

    def prediction_text(self, value, ttype) -> str:
        return "—" if value is None else f"score {float(value):.2f}"

    def gold_text(self, gold, ttype) -> str:
        """The inputs' gold scores."""
        return f"score {' / '.join(f'{float(x):g}' for x in dict.fromkeys(gold) if x is not None)}"

    # -------------------------------------------------------------- the model
    def config_overrides(self, num_labels: int) -> dict:
        return {"num_labels": 1, "problem_type": "regression"}   # trained by squared error (transformers')

    def check_model(self, model, ttype, name: str) -> None:
        k = int(model.config.num_labels)
        if k != 1:
            raise ModelError(f"model {name}: field 'num_labels': the model has {k} outputs (config.json), a "
                             "regression head has one (the score)")

    def predict(self, model, tokenizer, texts, texts_b=None, batch_size: int = 64, max_length: int = 128,
                precision=None) -> np.ndarray:
        """The model's scores (its one output, float32), in input order."""
        from beluga.model.precision import FP32

        if len(texts) and int(model.config.num_labels) != 1:
            raise ModelError(f"model: field 'num_labels': a regression head has one output, this one has "
                             f"{model.config.num_labels}")
        return sequence_forward(model, tokenizer, texts, texts_b, batch_size, max_length, precision or FP32, 1,
                                lambda logits: logits[:, :1])[:, 0]

    def outputs(self, model, tokenizer, texts, texts_b, batch_size, max_length, doc_stride, precision):
        use_b = any(b is not None for b in texts_b)
        scores = self.predict(model, tokenizer, texts, texts_b if use_b else None, batch_size, max_length, precision)
        return {"score": scores.tolist()}

    def example_gold(self, examples):
        return examples["label"].astype(np.float64).to_numpy()

    def check_predictions(self, df, where: str) -> None:
        if not len(df):
            return
        scores = np.array(df["score"].tolist(), dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(scores))
        if len(bad):
            k = int(bad[0])
            raise DataError(f"predictions {where} (not written): field 'score': {len(bad)} score(s) not finite "
                            f"(first: case {df['case_id'].iat[k]!r}, input {df['input_idx'].iat[k]}: {scores[k]})")

    def prediction_schema(self):
        import pyarrow as pa

        return pa.schema([("split", pa.string()), ("case_id", pa.string()), ("input_idx", pa.int32()),
                          ("score", pa.float32()), ("label", pa.float32())])

    # -------------------------------------------------------------- training
    def iid_items(self, ttype, iid_train) -> list:
        from beluga.heads.score.batches import score_iid_items

        return score_iid_items(iid_train)

    def case_items(self, ttype, r, options) -> tuple[str, list]:
        from beluga.heads.score.batches import case_items

        return case_items(r)

    # -------------------------------------------------------------- scoring
    def score_cases(self, suite, predictions, ttype, source, on_cases, reasons):
        from beluga.heads.score.cases import score_suite_cases

        return score_suite_cases(suite, predictions, ttype.score_range, source=source, on_cases=on_cases,
                                 reasons=reasons)

    def example_outcomes(self, preds, gold, ids, source, collapse) -> dict:
        """``pred_score`` and ``gold_score`` (the gold table's ``label``, a number); ``correct`` is null (a
        score is not right or wrong by itself)."""
        import pandas as pd

        from beluga.heads.score.cases import checked_scores

        pred = checked_scores(preds["score"].tolist(), source, lambda i: (ids[i], 0))
        try:
            gold_score = gold.loc[ids, "label"].astype(np.float64).to_numpy()
        except (TypeError, ValueError) as e:
            raise DataError(f"{source}: field 'label': gold scores must be numbers ({e})") from None
        return {"pred_score": pred, "gold_score": gold_score,
                "correct": pd.array([pd.NA] * len(ids), dtype="boolean")}

    def metric(self, name: str, rows) -> float:
        if name not in REGRESSION_METRICS:
            raise ValueError(f"metric {name!r} is not a regression metric ({', '.join(REGRESSION_METRICS)})")
        return correlation(name, rows["pred_score"].astype(float), rows["gold_score"].astype(float))

    # -------------------------------------------------------------- model selection
    def objective_plan(self, ttype, cases, answer_match, eq_or_not_negative_target) -> dict:
        from beluga.heads.score.objective import regression_plan

        return regression_plan(cases)

    def objective_parts(self, ttype, plan, preds, source, predict_spans) -> dict:
        from beluga.heads.score.objective import regression_parts

        return regression_parts(plan, preds, source, ttype.score_range)

    # -------------------------------------------------------------- diagnostics
    def diagnostics(self, ttype, iid, suite, is_dir, source, whole_suite, degenerate_share):
        """A constant predictor is a regression's degenerate solution (:mod:`beluga.heads.score.diagnostics`)."""
        reg = score_diagnostics(iid["score"], suite["score"], source, whole_suite)
        iid_deg, suite_deg = reg.pop("iid_deg"), reg.pop("suite_deg")
        out = {"n_suite_gold": 0, "iid_pred_share": {}, "iid_gold_share": {}, "suite_pred_share": {},
               "suite_gold_share": {}, **reg}
        return out, iid_deg, suite_deg

    def constant_predictor(self, ttype, values, source, share=DEGENERATE_SHARE):
        """Scores whose standard deviation is at most :data:`beluga.heads.score.diagnostics.CONSTANT_STD`, as the
        diagnostics (``share``: a classifier's and a QA head's; a score is constant or not)."""
        scores = finite_scores(values, source)
        if not len(scores) or not constant_predictor(scores):
            return None
        mean, sd = float(scores.mean()), float(scores.std())
        return {"prediction": mean, "sd": sd, "n_inputs": len(scores), "constant_std": CONSTANT_STD,
                "text": f"score {mean:.2f} ± {sd:.2f} for {share_text(1.0, len(scores))}"}

