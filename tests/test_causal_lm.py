"""``test --prompt --label-words`` on causal LMs (issue 41, scope 3; beluga/model/causal_lm.py): tiny random decoders
built offline (tests/tiny_decoder.py: GPT-2 with right padding and no pad token, Llama with left padding),
their class probabilities checked against log-likelihoods computed by hand, one sequence at a time; the labels
read by name whatever the order the words are given in or the config's id2label; ``test``'s outputs equal
``score`` on the hand-computed probabilities; every bad option one line."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import case, make_tiny_suite
from tiny_decoder import build_decoder, build_tokenizer

from beluga.analyses.behavioral import failure_summary, summary_html
from beluga.cli import main
from beluga.cli.testing import head_cut_warning
from beluga.core.errors import BelugaError, ConfigError
from beluga.core.tasks import PARA, READ, SENT, SIMILARITY
from beluga.model.causal_lm import (
    FALLBACK_CONTEXT,
    LabelWords,
    batch_bytes,
    check_distinct_continuations,
    check_prompt,
    context_length,
    default_max_length,
    encode_pair,
    label_word_pairs,
    label_word_probs,
    parse_label_words,
    suite_label_word_predictions,
)
from beluga.score.outcomes import score_cases
from beluga.suites.format import save_suite

PROMPT = "Review: {text} Sentiment:"
#: "terrific" / "dreadful" are several tokens of the tiny BPE (checked below)
WORDS = ["negative=dreadful", "positive=terrific"]


def _texts(suite):
    return [x for xs in suite["inputs"] for x in xs] + ["Review: Sentiment:"]


@pytest.fixture(scope="module")
def suite_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("suite") / "suite.parquet"
    save_suite(make_tiny_suite(3), path)
    return path


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """GPT-2: right padding, no pad token (pad := eos)."""
    return build_decoder(tmp_path_factory.mktemp("dec_gpt2") / "m", _texts(make_tiny_suite(3)), family="gpt2")


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def decoder(request, tmp_path_factory):
    """The GPT-2 above; Llama: left padding with a pad token of its own."""
    if request.param == "gpt2":
        return request.getfixturevalue("gpt2")
    return build_decoder(tmp_path_factory.mktemp("dec_llama") / "m", _texts(make_tiny_suite(3)), family="llama",
                         padding_side="left", pad=True)


def _load(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def _hand_probs(model, tok, prompt: str, words: list[str]) -> np.ndarray:
    """Each word's summed log-likelihood after the prompt, one sequence at a time, softmaxed over the words."""
    lls = []
    for w in words:
        ctx = tok.encode(prompt)
        cont = tok.encode(prompt + " " + w)[len(ctx):]
        ids = torch.tensor([ctx + cont[:-1]])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
        lls.append(sum(float(logp[len(ctx) - 1 + t, c]) for t, c in enumerate(cont)))
    x = np.exp(np.array(lls) - max(lls))
    return x / x.sum()


def _hand_predictions(path, suite) -> pd.DataFrame:
    model, tok = _load(path)
    rows = [(r.case_id, j, _hand_probs(model, tok, PROMPT.format(text=t), ["dreadful", "terrific"]).tolist())
            for r in suite.itertuples(index=False) for j, t in enumerate(r.inputs)]
    return pd.DataFrame(rows, columns=["case_id", "input_idx", "probs"])


def _run_test(model, suite_file, out, *extra):
    return main(["test", "--model", str(model), "--suite", str(suite_file), "--out", str(out), "--task", "sent",
                 "--prompt", PROMPT, "--precision", "fp32", "--batch-size", "3", *extra])


@pytest.fixture(scope="module")
def hand(decoder):
    """The tiny suite's probabilities computed by hand, one sequence at a time."""
    return _hand_predictions(decoder, make_tiny_suite(3))


@pytest.fixture(scope="module")
def tested(decoder, suite_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("test_out")
    assert _run_test(decoder, suite_file, out, "--label-words", *WORDS) == 0
    return out


def test_probabilities_equal_hand_loglikelihoods_batched_or_not(decoder, tested, hand):
    model, tok = _load(decoder)
    assert (tok.pad_token is None) == (tok.padding_side == "right")         # GPT-2: none; Llama: its own
    assert len(tok.encode(" dreadful")) > 1 and len(tok.encode(" terrific")) > 1   # several tokens per word
    suite = make_tiny_suite(3)
    got = pd.read_parquet(tested / "predictions.parquet")
    assert got[["case_id", "input_idx"]].values.tolist() == hand[["case_id", "input_idx"]].values.tolist()
    np.testing.assert_allclose(np.stack(got["probs"]), np.stack(hand["probs"]), atol=2e-6)
    assert np.ptp(np.stack(hand["probs"])[:, 0]) > 0.2          # not uniform: the check can fail
    # another batching (padding on the tokenizer's side) == one sequence at a time
    prompts = [PROMPT.format(text=t) for xs in suite["inputs"] for t in xs]
    words = LabelWords(("negative", "positive"), ("dreadful", "terrific"))
    np.testing.assert_allclose(label_word_probs(model, tok, prompts, words, batch_size=16),
                               np.stack(hand["probs"]), atol=2e-6)
    run = json.loads((tested / "run.json").read_text())
    assert run["arguments"]["label_words"] == {"negative": "dreadful", "positive": "terrific"}
    assert run["arguments"]["prompt"] == PROMPT


def test_labels_read_by_name_not_position(decoder, tested, suite_file, tmp_path):
    """Words given in the other order, or a model whose config id2label names the classes the other way round:
    the same per-class probabilities (a reversed / named-label decoder)."""
    base = pd.read_parquet(tested / "predictions.parquet")
    assert _run_test(decoder, suite_file, tmp_path / "rev", "--label-words", *reversed(WORDS)) == 0
    named = tmp_path / "named"
    shutil.copytree(decoder, named)
    cfg = json.loads((named / "config.json").read_text())
    cfg.update(id2label={"0": "positive", "1": "negative"}, label2id={"positive": 0, "negative": 1})
    (named / "config.json").write_text(json.dumps(cfg))
    assert _run_test(named, suite_file, tmp_path / "named_out", "--label-words", "Positive=terrific",
                     "NEG=dreadful") == 0
    for out in (tmp_path / "rev", tmp_path / "named_out"):
        np.testing.assert_array_equal(np.stack(pd.read_parquet(out / "predictions.parquet")["probs"]),
                                      np.stack(base["probs"]))
    # swapping the words swaps the classes (the words, not their order, say which is which)
    assert _run_test(decoder, suite_file, tmp_path / "swap", "--label-words", "negative=terrific",
                     "positive=dreadful") == 0
    np.testing.assert_allclose(np.stack(pd.read_parquet(tmp_path / "swap" / "predictions.parquet")["probs"]),
                               np.stack(base["probs"])[:, ::-1], atol=2e-6)


def test_outputs_equal_score_on_hand_probabilities(decoder, tested, hand, suite_file, tmp_path):
    from beluga.suites.build import read_suite

    hand.to_parquet(tmp_path / "hand.parquet")
    assert main(["score", "--suite", str(suite_file), "--predictions", str(tmp_path / "hand.parquet"), "--out",
                 str(tmp_path / "scored"), "--task", "sent"]) == 0
    scored = pd.read_csv(tmp_path / "scored" / "functionalities.csv").set_index("functionality")
    funcs = pd.read_csv(tested / "functionalities.csv")
    assert len(funcs) == len(scored) == 4
    for r in funcs.itertuples(index=False):
        s = scored.loc[r.functionality]
        assert (r.n_scored, r.n_failed) == (s.n_scored, s.n_failed)
        if r.n_scored:
            assert r.failure_rate == pytest.approx(s.failure_rate)
    cases = pd.read_parquet(tested / "cases.parquet").set_index("case_id")["status"]
    by_score = pd.read_parquet(tmp_path / "scored" / "cases.parquet").set_index("case_id")["status"]
    assert cases.sort_index().tolist() == by_score.sort_index().tolist()
    assert {"pass", "fail"} <= set(cases)
    # the page: the summary of the hand-computed probabilities, through the one code path after them
    loaded, ttype = read_suite(str(suite_file), "sent")
    hand = hand.assign(split="suite_test")
    status = score_cases(loaded, hand, ttype, reasons=True)
    f, ex = failure_summary(loaded, [status], [hand], ttype, [str(decoder)], k=3)
    title = f"{decoder} on {suite_file.name} (sent, {len(loaded)} cases)"
    expected = summary_html(f, ex, title, [str(decoder)])
    assert (tested / "summary.html").read_text() == expected


def test_bf16_close_to_fp32(gpt2, suite_file, tmp_path):
    """--precision bf16: the forward passes under autocast (one family: the time budget)."""
    assert _run_test(gpt2, suite_file, tmp_path / "bf", "--label-words", *WORDS, "--precision", "bf16",
                     "--max-cases-per-functionality", "1") == 0
    assert json.loads((tmp_path / "bf" / "run.json").read_text())["arguments"]["precision"] == "bf16"
    got = pd.read_parquet(tmp_path / "bf" / "predictions.parquet")
    assert len(got) == 7
    model, tok = _load(gpt2)
    fp32 = label_word_probs(model, tok, [PROMPT.format(text=t) for t in got["input"]],
                            LabelWords(("negative", "positive"), ("dreadful", "terrific")))
    np.testing.assert_allclose(np.stack(got["probs"]), fp32, atol=0.1)
    assert not np.array_equal(np.stack(got["probs"]), fp32.astype(np.float32))     # bf16 did run


def test_trailing_space_and_pairs(decoder):
    """lm-eval moves a prompt's trailing spaces into the continuation; a pair task fills {text_b}."""
    model, tok = _load(decoder)
    ctx, cont = encode_pair(tok, "Review: a fine film Sentiment: ", " dreadful")
    assert ctx == tok.encode("Review: a fine film Sentiment:")
    assert ctx + cont == tok.encode("Review: a fine film Sentiment:  dreadful")
    rows = [case("p-0", "pairs", "Vocabulary", "MFT", ["a fine film"], [1]),
            case("p-1", "pairs", "Vocabulary", "MFT", ["the plot"], [0])]
    cases = pd.DataFrame(rows)
    cases["inputs_b"] = [["a fine flim"], ["this is awful"]]
    tmpl = check_prompt("Q1: {text} Q2: {text_b} Same?", PARA)
    words = parse_label_words(["duplicate=terrific", "not_duplicate=dreadful"], PARA)
    assert words.classes == ("not duplicate", "duplicate")
    from beluga.model.precision import FP32

    got = suite_label_word_predictions(model, tok, cases, tmpl, words, "suite_test", 2, 64, FP32)
    want = [_hand_probs(model, tok, f"Q1: {a} Q2: {b} Same?", ["dreadful", "terrific"])
            for a, b in (("a fine film", "a fine flim"), ("the plot", "this is awful"))]
    np.testing.assert_allclose(np.stack(got["probs"]), np.stack(want), atol=2e-6)


def test_blank_prompt_refused_and_right_padding_whatever_the_side(decoder):
    """An empty or blank filled prompt is one line (lm-eval has no defined context for it); the batch is padded
    on the right whatever the tokenizer's side (lm-eval's choice for causal LMs), so batches equal single rows."""
    model, tok = _load(decoder)
    for blank in ("", "  "):
        with pytest.raises(BelugaError, match="field '--prompt': a filled prompt is empty or blank"):
            encode_pair(tok, blank, " dreadful")
    words = LabelWords(("negative", "positive"), ("dreadful", "terrific"))
    prompts = [PROMPT.format(text=t) for t in ("a", "a fine film with a long plot", "the plot")]
    one = np.concatenate([label_word_probs(model, tok, [p], words, batch_size=1) for p in prompts])
    for side in ("left", "right"):
        tok.padding_side = side
        np.testing.assert_allclose(label_word_probs(model, tok, prompts, words, batch_size=3), one, atol=2e-6)


def test_bf16_checkpoint_runs_in_float32(decoder, tmp_path):
    """A checkpoint saved in bf16 (as most hub LLMs are) is loaded as float32 weights: --precision fp32 is
    float32, as run.json says, and equals the float32 model's probabilities."""
    from beluga.model.modeling import load_trained

    model, tok = _load(decoder)
    reference, _ = _load(decoder)
    model.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    tok.save_pretrained(tmp_path / "bf16")
    loaded, _ = load_trained(str(tmp_path / "bf16"), head="causal_lm")
    assert {p.dtype for p in loaded.parameters()} == {torch.float32}
    words = LabelWords(("negative", "positive"), ("dreadful", "terrific"))
    with torch.no_grad():   # the checkpoint's bf16-rounded weights, in float32 (buffers untouched)
        for p in reference.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    prompts = [PROMPT.format(text="a fine film")]
    np.testing.assert_allclose(label_word_probs(loaded, tok, prompts, words),
                               label_word_probs(reference, tok, prompts, words), atol=1e-6)


def test_sent_three_label_words():
    words = parse_label_words(["neutral=ok", "positive=good", "negative=bad"], SENT)
    assert words.classes == ("negative", "neutral", "positive") and words.words == ("bad", "ok", "good")


@pytest.mark.parametrize("template,task,needle", [
    ("Review: Sentiment:", SENT, "has no {text}"),
    ("{text} {label}", SENT, "{label} is not a field"),
    ("{text} {text_b}", SENT, "{text_b} names a second text"),
    ("Q1: {text}", PARA, "has no {text_b}"),
    ("{text:>5}", SENT, "is not a field"),
    ("{text", SENT, "is not a template"),
])
def test_bad_prompt_one_line(template, task, needle):
    with pytest.raises(BelugaError, match=None) as e:
        check_prompt(template, task)
    assert needle in str(e.value) and "field '--prompt'" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("items,needle", [
    (["negative=bad"], "no word for 'positive'"),
    (["negative=bad", "positive=good", "negative=dreadful"], "given twice"),
    (["negative=bad", "happy=good"], "'happy' is not a class"),
    (["negative bad", "positive=good"], "is not CLASS=WORD"),
    (["negative=", "positive=good"], "empty word"),
    (["negative=good", "positive=good"], "the word of two classes"),
])
def test_bad_label_words_one_line(items, needle):
    with pytest.raises(BelugaError) as e:
        parse_label_words(items, SENT)
    assert needle in str(e.value) and "field '--label-words'" in str(e.value)


@pytest.mark.parametrize("task", [READ, SIMILARITY])
def test_read_and_similarity_refused(task):
    with pytest.raises(BelugaError, match="only on classification tasks"):
        parse_label_words(["a=b"], task)


def test_cli_refusals_one_line(decoder, suite_file, tmp_path, capsys):
    from beluga.model.modeling import load_model, save_model

    cases = [
        (["--prompt", PROMPT], "field '--label-words'"),
        (["--label-words", *WORDS], "field '--prompt'"),
        (["--prompt", PROMPT, "--label-words", *WORDS, "--label-order", "negative,positive"], "'--label-order'"),
    ]
    for i, (extra, needle) in enumerate(cases):
        assert main(["test", "--model", str(decoder), "--suite", str(suite_file), "--out", str(tmp_path / f"o{i}"),
                     "--task", "sent", *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and err.count("\n") == 0, err
    clf = tmp_path / "clf"   # a classifier (no LM head): refused as load_trained refuses a missing head
    model, tok = load_model("tiny-random", 2)
    save_model(model, tok, clf, task_type="sent")
    capsys.readouterr()
    assert _run_test(clf, suite_file, tmp_path / "oc", "--label-words", *WORDS) == 2
    err = capsys.readouterr().err.strip()
    assert "field 'head'" in err and "causal language-model head" in err and err.count("\n") == 0, err


def test_three_sent_words_and_truncation_said(decoder, suite_file, tmp_path, capsys):
    """SENT's three classes by name (three probability columns); inputs longer than --max-length keep their
    last tokens (as lm-eval) and the run says how many."""
    out = tmp_path / "three"
    assert _run_test(decoder, suite_file, out, "--label-words", *WORDS, "neutral=middling", "--max-length", "12") == 0
    printed = capsys.readouterr().out
    probs = np.stack(pd.read_parquet(out / "predictions.parquet")["probs"])
    assert probs.shape == (21, 3)
    model, tok = _load(decoder)
    words = LabelWords(("negative", "neutral", "positive"), ("dreadful", "middling", "terrific"))
    prompt = PROMPT.format(text="this is awful 0")
    np.testing.assert_allclose(probs[0], label_word_probs(model, tok, [prompt], words, max_length=12)[0], atol=2e-6)
    full = label_word_probs(model, tok, [prompt], words, max_length=64)[0]   # not truncated: other numbers
    assert np.abs(np.log(probs[0]) - np.log(full)).max() > 1e-3
    (note,) = json.loads((out / "run.json").read_text())["truncated_inputs"]
    assert "21 of 21 inputs were longer than --max-length 12 tokens" in note and "head of their prompt" in note
    # a warning of the summary: the terminal's (wrapped), summary.md's and summary.html's, under the title
    assert f"⚠ {note}" in " ".join(printed.split())
    md = (out / "summary.md").read_text()
    assert md.index("**⚠ model ") < md.index("| class |") and "21 of 21 inputs were longer than" in md
    assert "id='warnings'" in (out / "summary.html").read_text()
    assert "21 of 21 inputs were longer than --max-length 12 tokens" in (out / "summary.html").read_text()


def test_head_cut_warning_names_the_fix():
    """Below the model's context the warning asks for a longer --max-length; at it, for a shorter prompt."""
    short = head_cut_warning("m", 3, 10, 12, (256, "config.json n_positions 256"))
    assert short.startswith("model m: 3 of 10 inputs were longer than --max-length 12 tokens")
    assert "raise --max-length (the model's context: 256 tokens, config.json n_positions 256)" in short
    full = head_cut_warning("m", 3, 10, 256, (256, "config.json n_positions 256"))
    assert "do not fit the model's context: shorten the prompt" in full and "raise" not in full


@pytest.mark.parametrize("config, tok_max, want", [
    ({"n_positions": 1024, "max_position_embeddings": 2048}, 512, (1024, "config.json n_positions 1024")),
    ({"max_position_embeddings": 4096}, 512, (4096, "config.json max_position_embeddings 4096")),
    ({"n_ctx": 300}, 512, (300, "config.json n_ctx 300")),
    ({}, 777, (777, "the tokenizer's model_max_length 777")),
    ({"n_positions": 0}, int(1e30), (FALLBACK_CONTEXT, None)),   # transformers' "no limit": not a length
])
def test_context_length_as_lm_eval_reads_it(config, tok_max, want):
    class Tok:
        model_max_length = tok_max

    n, how = context_length(config, Tok())
    assert n == want[0]
    assert how == want[1] if want[1] else "lm-evaluation-harness's default 2048" in how


def test_default_max_length_capped_by_memory_by_hand():
    """batch 4, vocabulary 100, 2 heads: 4 x 4 x L x (2 x 100 + 2 L) = 3200 L + 32 L² bytes; half of 1,280,000
    free bytes is 640,000 = the bytes at L = 100 (L = 101: 649,632), so the 1024-token context is capped at 100."""
    config = {"n_positions": 1024, "vocab_size": 100, "n_head": 2}
    assert batch_bytes(4, 100, 100, 2) == 640_000 and batch_bytes(4, 101, 100, 2) == 649_632
    got = default_max_length(config, None, 4, 1_280_000, "cpu")
    assert (got.tokens, got.context) == (100, 1024)
    assert "context is 1024 tokens (config.json n_positions 1024)" in got.capped and "batch of 4" in got.capped
    assert got.line("m").startswith("model m: --max-length 100, capped by memory: ")
    for free in (None, 10**12):   # unknown free memory, or plenty: the context, not capped
        got = default_max_length(config, None, 4, free, "cpu")
        assert (got.tokens, got.capped) == (1024, "")
        assert got.line("m") == "model m: --max-length 1024, the model's context (config.json n_positions 1024)"
    assert default_max_length(config, None, 4, 10, "cpu").tokens == 8   # never below the least --max-length


def test_default_max_length_is_the_context_from_config(gpt2, suite_file, tmp_path, capsys):
    """Without --max-length a causal LM reads up to its context (the tiny GPT-2's n_positions 256): nothing is
    cut, the terminal and run.json say which length and whence."""
    assert json.loads((gpt2 / "config.json").read_text())["n_positions"] == 256
    out = tmp_path / "default"
    assert _run_test(gpt2, suite_file, out, "--label-words", *WORDS) == 0
    printed = capsys.readouterr().out
    assert f"model {gpt2}: --max-length 256, the model's context (config.json n_positions 256)" in printed
    run = json.loads((out / "run.json").read_text())
    assert run["arguments"]["max_length"] is None and "truncated_inputs" not in run
    assert run["arguments"]["max_length_default"] == {str(gpt2): {
        "tokens": 256, "context": 256, "context_from": "config.json n_positions 256", "capped": None}}
    assert "⚠" not in (out / "summary.md").read_text()


def test_default_max_length_capped_then_heads_cut_warned(gpt2, suite_file, tmp_path, capsys, monkeypatch):
    """Free memory that holds a batch of 3 at 12 tokens but not 13: the default is capped at 12, the terminal
    says so and why, and the prompts cut at their head are the summary's warning; the probabilities are those
    of --max-length 12."""
    import beluga.cli.testing as testing

    config = json.loads((gpt2 / "config.json").read_text())
    free = 2 * batch_bytes(3, 12, config["vocab_size"], config["n_head"])
    assert batch_bytes(3, 13, config["vocab_size"], config["n_head"]) > free / 2
    monkeypatch.setattr(testing, "free_memory", lambda device: free)
    out = tmp_path / "capped"
    assert _run_test(gpt2, suite_file, out, "--label-words", *WORDS) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert f"model {gpt2}: --max-length 12, capped by memory: the model's context is 256 tokens" in printed
    run = json.loads((out / "run.json").read_text())
    assert run["arguments"]["max_length_default"][str(gpt2)]["tokens"] == 12
    (warning,) = run["truncated_inputs"]
    assert "inputs were longer than --max-length 12 tokens" in warning and f"⚠ {warning}" in printed
    model, tok = _load(gpt2)
    words = LabelWords(("negative", "positive"), ("dreadful", "terrific"))
    probs = np.stack(pd.read_parquet(out / "predictions.parquet")["probs"])
    prompt = PROMPT.format(text="this is awful 0")
    np.testing.assert_allclose(probs[0], label_word_probs(model, tok, [prompt], words, max_length=12)[0], atol=2e-6)


@pytest.fixture(scope="module")
def lower_tok():
    """The tiny BPE with a normaliser that lower-cases (as an uncased model's tokenizer)."""
    return build_tokenizer(_texts(make_tiny_suite(3)), lowercase=True)


@pytest.mark.parametrize("items,alike", [
    (["negative=Good", "positive=good"], ("negative='Good'", "positive='good'")),
    (["negative=bad", "neutral=OK", "positive=ok"], ("neutral='OK'", "positive='ok'")),
    (["negative=GOOD", "neutral=meh", "positive=good"], ("negative='GOOD'", "positive='good'")),
])
def test_words_the_tokenizer_makes_one_are_refused(lower_tok, items, alike):
    """Words that differ as strings but are the same continuation tokens after the prompt (the tokenizer
    lower-cases): every input would get equal probabilities, so they are refused in one line naming both."""
    words = parse_label_words(items, SENT)                   # different strings: the parser keeps them
    cases = make_tiny_suite(1)
    with pytest.raises(ConfigError) as e:
        check_distinct_continuations(lower_tok, words, PROMPT, cases, source="model m")
    msg = str(e.value)
    assert msg.startswith("model m: field '--label-words': ") and "\n" not in msg, msg
    assert all(a in msg for a in alike) and "could not be told apart" in msg, msg
    same = lower_tok.encode(" " + items[-1].split("=")[1])
    assert str(same) in msg                                  # the tokens both words are


def test_words_sharing_first_tokens_or_distinct_are_kept(lower_tok):
    """Only identical full continuations are refused: words sharing their first tokens (" terrific" and
    " terrible" share six) and plainly distinct words pass, with each word's own continuation."""
    assert lower_tok.encode(" terrific")[:6] == lower_tok.encode(" terrible")[:6]
    assert lower_tok.encode(" terrific") != lower_tok.encode(" terrible")
    cases = make_tiny_suite(1)
    prompts = [PROMPT.format(text=t) for xs in cases["inputs"] for t in xs]
    for items in (["negative=terrible", "positive=terrific"], ["negative=bad", "positive=Good"],
                  ["negative=Good", "neutral=good good", "positive=goodness"]):
        words = parse_label_words(items, SENT)
        check_distinct_continuations(lower_tok, words, PROMPT, cases)
        pairs = label_word_pairs(lower_tok, prompts, words)
        assert len(pairs) == len(prompts) * len(words.words)
        for i, p in enumerate(prompts):
            for j, w in enumerate(words.words):
                assert pairs[i * len(words.words) + j] == encode_pair(lower_tok, p, " " + w)


def test_cased_tokenizer_keeps_words_that_differ_in_case():
    """A cased tokenizer reads ``Good`` and ``good`` as different tokens: both kept."""
    tok = build_tokenizer(_texts(make_tiny_suite(3)))
    assert tok.encode(" Good") != tok.encode(" good")
    check_distinct_continuations(tok, parse_label_words(["negative=Good", "positive=good"], SENT), PROMPT,
                                 make_tiny_suite(1))


def test_label_word_probs_refuses_alike_words_before_any_forward_pass(tmp_path, lower_tok):
    """The scoring itself refuses them too (every prompt checked, before the model runs)."""
    path = build_decoder(tmp_path / "lower", _texts(make_tiny_suite(3)), lowercase=True)
    model, tok = _load(path)
    words = parse_label_words(["negative=Good", "positive=good"], SENT)
    calls = []
    model.register_forward_hook(lambda *a: calls.append(1))
    with pytest.raises(ConfigError, match="field '--label-words': negative='Good' and positive='good' are the same"):
        label_word_probs(model, tok, [PROMPT.format(text="a fine film")], words, source="model m")
    assert not calls
    ok = parse_label_words(["negative=Good", "positive=terrific"], SENT)
    assert label_word_probs(model, tok, [PROMPT.format(text="a fine film")], ok).shape == (1, 2)
    assert calls
