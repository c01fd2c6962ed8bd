"""The span head: extractive question answering (READ). The model predicts start / end positions in a
context; predictions are answer strings with their character offsets; cases are scored on the answers,
examples by SQuAD's exact match and F1."""

from __future__ import annotations

from collections import Counter

import numpy as np

from beluga.core.errors import BelugaError
from beluga.heads.base import DEGENERATE_SHARE, Head, share_text, shorten
from beluga.train.selection import mean_or_none, pair_mean


def top_answer(answers: list[str]) -> tuple[str | None, float, float]:
    """(most frequent answer, its share, share of empty answers)."""
    if not answers:
        return None, float("nan"), float("nan")
    counts = Counter(answers)
    top, n_top = max(counts.items(), key=lambda kv: kv[1])
    n = len(answers)
    return top, n_top / n, counts.get("", 0) / n


def _answers(values) -> list[str]:
    return ["" if v is None or (isinstance(v, float) and v != v) else str(v).strip() for v in values]


def read_parts(start_hits, end_hits, inv_same_start, inv_same_end) -> dict:
    """The READ metrics of the reference objective: start / end token
    accuracy over the MFT windows, start / end argmax agreement over the INV
    pairs, and their means."""
    sa, ea, ss, es = (mean_or_none(x) for x in (start_hits, end_hits, inv_same_start, inv_same_end))
    return {"n_mft_windows": len(start_hits), "n_inv": len(inv_same_start),
            "mft_start_accuracy": sa, "mft_end_accuracy": ea,
            "mft_mean_accuracy": pair_mean(sa, ea),
            "inv_start_pass": ss, "inv_end_pass": es,
            "inv_mean_pass": pair_mean(ss, es)}


class Span(Head):
    name = "qa"
    auto_class = "AutoModelForQuestionAnswering"
    family_table = ("modeling_auto", "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES")
    words = "an extractive QA head"
    predicts = "answers (extractive QA)"
    pipeline_tag = "question-answering"
    value_column = "answer"
    gold_field = "answers"
    example_columns = ("context", "question", "answers")
    second_text_first = True
    needs_gold = "answer"

    def expectations(self) -> tuple[str, ...]:
        from beluga.score.expectations import EXPECT_FNS

        return tuple(EXPECT_FNS)

    def two_texts(self, ttype) -> bool:
        return True   # a context and a question

    def inputs_words(self, ttype) -> str:
        return "context and question (inputs and inputs_b)"

    def spec_label(self, ttype, value, fail) -> int | None:
        fail(f"task {ttype.name!r} has no class labels (give 'answer')")

    def prediction_text(self, value, ttype) -> str:
        return repr(shorten(value, 40))

    def gold_text(self, gold, ttype) -> str:
        return f"answer {shorten(gold[0], 30)!r}"

    # -------------------------------------------------------------- the model
    def outputs(self, model, tokenizer, texts, texts_b, batch_size, max_length, doc_stride, precision):
        """``answer`` / ``start`` / ``end`` (texts: contexts, texts_b: questions)."""
        from beluga.heads.span.qa import predict_qa

        spans = predict_qa(model, tokenizer, questions=texts_b, contexts=texts, batch_size=batch_size,
                           max_length=max_length, stride=doc_stride, precision=precision)
        return {"answer": [a for a, _, _ in spans], "start": [st for _, st, _ in spans],
                "end": [en for _, _, en in spans]}

    def check_model(self, model, ttype, name: str) -> None:
        """Nothing beyond loading: a QA head's start / end logits have no class count to check."""

    def check_predictions(self, df, where: str) -> None:
        """Nothing to check: answers are strings (an empty answer is an answer)."""

    def example_texts(self, examples) -> tuple[list, list]:
        return list(examples["context"]), list(examples["question"])

    def prediction_schema(self):
        import pyarrow as pa

        return pa.schema([("split", pa.string()), ("case_id", pa.string()), ("input_idx", pa.int32()),
                          ("answer", pa.string()), ("start", pa.int32()), ("end", pa.int32())])

    # -------------------------------------------------------------- training
    def iid_items(self, ttype, iid_train) -> list:
        from beluga.train.items import TrainItem

        return [TrainItem("iid", [c], [q], answer=str(a[0]), answer_start=int(s[0]), qa=True)
                for c, q, a, s in zip(iid_train["context"], iid_train["question"], iid_train["answers"],
                                      iid_train["answer_starts"])]

    def case_items(self, ttype, r, options) -> tuple[str, list]:
        from beluga.heads.span.batches import qa_case_items

        return qa_case_items(r, options.qa_answer_match)

    # -------------------------------------------------------------- scoring
    def score_cases(self, suite, predictions, ttype, source, on_cases, reasons):
        from beluga.score.expectations import score_checklist_cases

        def values_of(values, keys):
            return ["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in values], None

        return score_checklist_cases(suite, predictions, ttype, "answer", values_of, None, source, on_cases,
                                     reasons)

    def example_outcomes(self, preds, gold, ids, source, collapse) -> dict:
        from beluga.heads.span.qa import exact_match, f1_score

        golds = [list(gold.at[i, "answers"]) for i in ids]
        answers = preds["answer"].fillna("").astype(str).tolist()
        em = [float(exact_match(a, g)) for a, g in zip(answers, golds)]
        return {"em": em, "f1": [float(f1_score(a, g)) for a, g in zip(answers, golds)],
                "correct": np.asarray(em) > 0.5}

    def metric(self, name: str, rows) -> float:
        if name not in ("em", "f1"):
            raise ValueError(f"metric {name!r} is not an extractive QA metric (em, f1)")
        return float(rows[name].astype(float).mean())

    # -------------------------------------------------------------- model selection
    def objective_plan(self, ttype, cases, answer_match, eq_or_not_negative_target) -> dict:
        """``mft`` (case_id, input_idx, context, question, answer, answer start; located as training locates
        it, ``answer_match``), ``inv`` (case_id, input_idx, the original's context and question, the
        perturbation's)."""
        from beluga.heads.span.qa import locate_answer

        plan: dict[str, list[tuple]] = {"mft": [], "inv": [], "dir": []}
        for r in cases.itertuples(index=False):
            n = len(r.inputs)
            where = f"objective 'reference': T_val case {r.case_id!r}"
            if r.inputs_b is None:
                raise BelugaError(f"{where}: field 'inputs_b': questions are missing")
            c, q = list(r.inputs), list(r.inputs_b)
            if r.test_type == "INV":
                plan["inv"].extend((r.case_id, j, c[0], q[0], c[j], q[j]) for j in range(1, n))
            elif r.test_type == "MFT" and getattr(r, "answers", None) is not None:
                for j, a in enumerate(r.answers):
                    start = locate_answer(c[j], str(a), answer_match)
                    if start < 0:
                        raise BelugaError(f"{where}: field 'answers': {str(a)!r} does not occur in the context")
                    plan["mft"].append((r.case_id, j, c[j], q[j], str(a), start))
            else:
                raise BelugaError(f"{where}: field 'test_type': READ has no reference metric for a {r.test_type} "
                                  f"with expectation {r.expect!r}")
        return plan

    def objective_parts(self, ttype, plan, preds, source, predict_spans) -> dict:
        """From the model itself (``predict_spans(plan)``: start / end hits on the MFT windows, start / end
        argmax agreement on the INV pairs): :func:`beluga.train.selection.read_parts`."""
        hits, same = predict_spans(plan)
        return read_parts(*hits, *same)

    # -------------------------------------------------------------- diagnostics
    def diagnostics(self, ttype, iid, suite, is_dir, source, whole_suite, degenerate_share):
        iid_top, iid_top_share, iid_empty = top_answer(_answers(iid["answer"]))
        suite_top, suite_top_share, suite_empty = top_answer(_answers(suite["answer"]))
        nan = float("nan")
        out = {"n_suite_gold": 0, "iid_pred_share": {}, "iid_gold_share": {}, "suite_pred_share": {},
               "suite_gold_share": {},
               "iid_majority_label": iid_top, "iid_majority_share": iid_top_share,
               "suite_majority_label": suite_top, "suite_majority_share": suite_top_share,
               "iid_empty_share": iid_empty, "suite_empty_share": suite_empty,
               "confidence_iid": nan, "confidence_suite": nan, "confidence_dir": nan}
        # the top answer's share is at least the empty answers' share (the empty answer counts as an answer)
        return out, iid_top_share >= degenerate_share, whole_suite and suite_top_share >= degenerate_share

    def constant_predictor(self, ttype, values, source, share=DEGENERATE_SHARE):
        """One answer (the empty one counts) for at least ``share`` of the inputs (:func:`top_answer`, as the
        diagnostics)."""
        answers = _answers(values)
        top, top_share, _ = top_answer(answers)
        if top is None or top_share < share:
            return None
        return {"prediction": top, "share": float(top_share), "n_inputs": len(answers),
                "text": f"answer {shorten(top, 30)!r} for {share_text(top_share, len(answers))}"}
