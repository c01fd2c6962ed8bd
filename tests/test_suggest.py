"""``suite suggest``: a masked language model's words for a template's ``{mask}``s, as CheckList's
``editor.suggest`` (beluga/model/masked_lm.py, beluga/suites/suggest.py), on tiny models built here offline
whose outputs are set by hand:

- a RoBERTa-style tokenizer (byte-level pre-tokenizer, ``Ġ`` marking a word's first token, ``<mask>`` absorbing
  the space before it) and a BERT-style one (WordPiece, ``##`` marking a continuation), each with a tiny
  masked LM whose output layer is zero and whose output bias is chosen: the logits are the bias at every
  position, so a single mask's ranking is the bias's among the tokens that make whole words;
- a bigram "model" whose logits at a position are a hand-written row chosen by the token before it, so the
  joint filling of two masks (the beam, the logit and log-probability scores) can be computed by hand.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
from conftest import beluga_cli, hf_flags

from beluga.core.errors import BelugaError
from beluga.model.masked_lm import SUGGEST_MODEL, fill_masks, suggest_words, word_tokens
from beluga.suites import spec as suite_spec
from beluga.suites.suggest import filled_text, lexicon_line, model_text, suggest_command, template_pieces

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
#: a RoBERTa-style vocabulary: word-first tokens with Ġ, a piece (ing), a word without Ġ (great: a sentence's
#: first word), a bare space and punctuation that are no words
ROBERTA_WORDS = ["This", "Ġis", "Ġa", "Ġmovie", ".", "Ġgreat", "Ġgood", "Ġvery", "Ġso", "Ġbad", "ing", "great",
                 "Ġ", "Ġ(", "Ġ..."]


def roberta_tokenizer(words=ROBERTA_WORDS, with_mask: bool = True):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS + list(words))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    mask = AddedToken("<mask>", lstrip=True, special=True)
    tok.add_special_tokens([mask])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", cls_token="<s>", sep_token="</s>",
                                   mask_token=mask if with_mask else None)


def bias_roberta(folder, bias: dict[str, float], with_mask: bool = True):
    """A tiny RobertaForMaskedLM with the RoBERTa-style tokenizer, saved to ``folder``: output weights zero, the
    output bias ``bias`` (by token; 0 elsewhere): every position's logits are the bias (the output layer's
    bias is the one its forward adds; the head's ``bias`` is set alike)."""
    from transformers import RobertaConfig, RobertaForMaskedLM

    tok = roberta_tokenizer(with_mask=with_mask)
    config = RobertaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=40, pad_token_id=1, bos_token_id=0,
                           eos_token_id=2, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = RobertaForMaskedLM(config)
    with torch.no_grad():
        model.lm_head.decoder.weight.zero_()
        model.lm_head.decoder.bias.zero_()
        for token, value in bias.items():
            model.lm_head.decoder.bias[tok.convert_tokens_to_ids(token)] = value
        model.lm_head.bias.copy_(model.lm_head.decoder.bias)
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return folder


def bias_bert(folder, bias: dict[str, float]):
    """A tiny BertForMaskedLM with a WordPiece tokenizer (uncased), output weights zero, the output bias
    ``bias``."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    (folder / "vocab").mkdir(parents=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "this", "is", "a", "movie", ".", "great", "good",
             "##ing", "##s", "bad"]
    (folder / "vocab" / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizerFast(str(folder / "vocab" / "vocab.txt"))
    config = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=40, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = BertForMaskedLM(config)
    with torch.no_grad():
        head = model.cls.predictions
        head.decoder.weight.zero_()
        head.decoder.bias.zero_()
        for token, value in bias.items():
            head.decoder.bias[tok.convert_tokens_to_ids(token)] = value
        head.bias.copy_(head.decoder.bias)
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return folder


class Bigram(torch.nn.Module):
    """Logits at position p: ``rows[token at p - 1]`` (a vector over the vocabulary; ``default`` elsewhere)."""

    def __init__(self, tok, rows: dict[str, dict[str, float]], default: float = -10.0):
        super().__init__()
        n = len(tok)
        self.table = torch.nn.Parameter(torch.full((n, n), default), requires_grad=False)
        for prev, row in rows.items():
            for token, value in row.items():
                self.table.data[tok.convert_tokens_to_ids(prev), tok.convert_tokens_to_ids(token)] = value

    def forward(self, input_ids):
        prev = torch.cat([input_ids[:, :1], input_ids[:, :-1]], dim=1)
        return type("Out", (), {"logits": self.table[prev]})()


def lse(values) -> float:
    return math.log(sum(math.exp(v) for v in values))


# ----------------------------------------------------------------------- which tokens make whole words
def test_word_tokens_roberta_style():
    tok = roberta_tokenizer()
    t = word_tokens(tok, "tiny")
    ids = tok.convert_tokens_to_ids
    starts = set(t.starts.tolist())
    anywhere = set(t.anywhere.tolist())
    # after a word only tokens that begin one; never a piece, a bare space, punctuation or a special token
    assert {ids(w) for w in ["Ġis", "Ġa", "Ġmovie", "Ġgreat", "Ġgood", "Ġvery", "Ġso", "Ġbad"]} == starts
    # after anything else (the start, punctuation): any word token, as CheckList (a piece cannot be told there)
    assert anywhere == starts | {ids("This"), ids("ing"), ids("great")}
    assert t.words[ids("Ġgreat")] == "great" and t.words[ids("Ġ")] == "" and t.words[ids("Ġ(")] == ""
    assert ids("Ġa") in t.alnum and ids("This") in t.alnum and ids(".") not in t.alnum and 0 not in t.alnum


def test_word_tokens_refuses_a_tokenizer_that_marks_no_word():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "[MASK]": 1, "a": 2, "b": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    t = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", mask_token="[MASK]")
    with pytest.raises(BelugaError, match=r"model m: field 'tokenizer': .*whole words cannot be told"):
        word_tokens(t, "m")


# ----------------------------------------------------------------------- one mask: the bias's ranking
BIAS = {"ing": 9.0, "<s>": 8.5, "Ġ": 8.0, "Ġ(": 7.5, "great": 6.0, "Ġgreat": 5.0, "Ġgood": 4.0, "Ġvery": 3.0,
        "Ġbad": -1.0}


def test_one_mask_ranks_whole_words_by_their_logit(tmp_path):
    """After "a" (a word) a mask takes a word's first token: the piece, the bare space, the punctuation and the
    special token are passed over although the model prefers them, and so is "great" without a space."""
    folder = bias_roberta(tmp_path / "m", BIAS)
    out = suggest_command(["This is a {mask} movie."], str(folder), top=4)
    lines = out.splitlines()
    assert lines[0].startswith(f"model {folder}, 1 template with 1 mask: the best 4 of ")
    assert "score: the model's logit" in lines[0]
    assert lines[1].split() == ["rank", "score", "words", "filled"]
    rows = [ln.split(None, 3) for ln in lines[2:]]
    # the fourth: the words of bias 0 (is, a, movie, so) tie, and ties go in the words' order
    assert rows == [["1", "5.000", "great", "This is a great movie."], ["2", "4.000", "good", "This is a good movie."],
                    ["3", "3.000", "very", "This is a very movie."], ["4", "0.000", "a", "This is a a movie."]]


def test_at_the_start_any_word_token_and_one_candidate_per_word(tmp_path):
    """At the start (after <s>, no word before) any word token may come, as CheckList: "great" without a space
    (6) and "Ġgreat" (5) are the one word "great", scored 6; the piece "ing" may start the text there (CheckList
    cannot tell it from a word); the special token, the space and "(" still may not."""
    folder = bias_roberta(tmp_path / "m", BIAS)
    from beluga.model.masked_lm import load_masked_lm

    model, tok, path, positions = load_masked_lm(str(folder))
    assert path == str(folder)
    assert positions == 40 - 2    # RoBERTa reserves pad_token_id + 1 positions
    found = suggest_words(model, tok, [model_text(template_pieces("{mask} is a movie."), tok.mask_token)], "m")
    assert found[:4] == [(("ing",), 9.0), (("great",), 6.0), (("good",), 4.0), (("very",), 3.0)]
    assert len({w for w, _ in found}) == len(found)


def test_wordpiece_continuations_are_never_offered(tmp_path):
    """A BERT tokenizer marks continuations (##ing): they are passed over at every mask, after a word or not."""
    folder = bias_bert(tmp_path / "b", {"##ing": 9.0, "##s": 8.0, "[SEP]": 8.5, ".": 7.0, "good": 5.0,
                                        "great": 4.0})
    for template in ("This is a {mask} movie.", "{mask} is a movie."):
        out = suggest_command([template], str(folder), top=2)
        assert [ln.split()[2] for ln in out.splitlines()[2:]] == ["good", "great"], out


# ----------------------------------------------------------------------- several masks: filled jointly
JOINT = {
    # mask 1 (after "is"): very 4, so 3
    "Ġis": {"Ġvery": 4.0, "Ġso": 3.0},
    # mask 2 after "very": good 1, the only likely token
    "Ġvery": {"Ġgood": 1.0},
    # mask 2 after "so": good, bad and movie 3.5 each; the piece "ing" 5, which may not follow a word
    "Ġso": {"Ġgood": 3.5, "Ġbad": 3.5, "Ġmovie": 3.5, "ing": 5.0},
}


def test_two_masks_filled_jointly_by_the_beam_with_checklists_logit_score():
    """CheckList's score: the logits summed over the masks, divided by 2. (so, good) = (3 + 3.5) / 2 = 3.25
    beats (very, good) = (4 + 1) / 2 = 2.5, which a greedy fill (beam 1: only "very" kept after mask 1) picks."""
    tok = roberta_tokenizer()
    model = Bigram(tok, JOINT)
    text = model_text(template_pieces("This is {mask} {mask}."), tok.mask_token)
    found = suggest_words(model, tok, [text], "bigram", beam_size=100)
    assert found[:4] == [(("so", "bad"), 3.25), (("so", "good"), 3.25), (("so", "movie"), 3.25),
                         (("very", "good"), 2.5)]
    assert ("so", "ing") not in dict(found)       # a piece after a word: never, although its logit is 5
    greedy = suggest_words(model, tok, [text], "bigram", beam_size=1)
    assert greedy[0] == (("very", "good"), 2.5)
    assert all(w[0] == "very" for w, _ in greedy)
    assert filled_text(template_pieces("This is {mask} {mask}."), ("so", "good")) == "This is so good."


def test_two_masks_log_probability_score():
    """With --score log-prob each token's log-softmax given the words before it: log p(very | is) + log p(good |
    very) beats log p(so | is) + log p(good | so), whose second word shares its mass with bad, movie and ing (the
    log-softmax is over the whole vocabulary, the tokens a mask may not take included)."""
    tok = roberta_tokenizer()
    n = len(tok)
    model = Bigram(tok, JOINT)
    text = model_text(template_pieces("This is {mask} {mask}."), tok.mask_token)
    found = dict(suggest_words(model, tok, [text], "bigram", score="log-prob"))
    rest = [-10.0] * (n - 2)
    p_very, p_so = 4.0 - lse([4.0, 3.0, *rest]), 3.0 - lse([4.0, 3.0, *rest])
    p_good_very = 1.0 - lse([1.0, *[-10.0] * (n - 1)])
    p_good_so = 3.5 - lse([3.5, 3.5, 3.5, 5.0, *[-10.0] * (n - 4)])
    assert found[("very", "good")] == pytest.approx((p_very + p_good_very) / 2, abs=1e-5)
    assert found[("so", "good")] == pytest.approx((p_so + p_good_so) / 2, abs=1e-5)
    assert max(found, key=found.get) == ("very", "good")
    assert found[("very", "good")] > found[("so", "good")] + 1


def test_fill_masks_returns_token_ids_and_mean_scores():
    tok = roberta_tokenizer()
    model = Bigram(tok, JOINT)
    ids = tok("This is <mask> <mask>.").input_ids
    out = fill_masks(model, ids, tok.mask_token_id, word_tokens(tok, "bigram"), beam_size=2)
    so, movie = tok.convert_tokens_to_ids("Ġso"), tok.convert_tokens_to_ids("Ġmovie")
    assert out[0] == ((so, movie), 3.25)    # ties in the token ids' order
    # beam 2: two entries go on after mask 1, each extended by its best beam + 10 = 12 tokens (8 words begin here)
    assert len(word_tokens(tok, "bigram").starts) == 8 and len(out) == 2 * 8


def test_several_templates_mean_over_the_templates_among_candidates_found_in_each():
    """Two templates: each candidate's mean score over them, as CheckList's unmask_multiple ('avg')."""
    tok = roberta_tokenizer()
    rows = {"Ġis": {"Ġvery": 4.0, "Ġso": 3.0, "Ġbad": -20.0}, "This": {"Ġvery": 1.0, "Ġso": 5.0, "Ġbad": 9.0}}
    texts = [model_text(template_pieces(t), tok.mask_token) for t in ("This is {mask}.", "This {mask}.")]
    found = suggest_words(Bigram(tok, rows), tok, texts, "bigram")
    assert found[:4] == [(("so",), 4.0), (("very",), 2.5), (("bad",), -5.5), (("a",), -10.0)]
    # beam 1 keeps each text's 11 best of 14 words: "bad" (-20) is not among the first text's, so it is left out
    # although its mean would be -5.5
    tok = roberta_tokenizer(ROBERTA_WORDS + [f"Ġw{i}" for i in range(6)])
    texts = [model_text(template_pieces(t), tok.mask_token) for t in ("This is {mask}.", "This {mask}.")]
    assert len(word_tokens(tok, "bigram").starts) == 14
    kept = dict(suggest_words(Bigram(tok, rows), tok, texts, "bigram", beam_size=1))
    assert ("bad",) not in kept and kept[("so",)] == 4.0 and kept[("very",)] == 2.5


def test_templates_without_a_common_candidate_are_refused(tmp_path, monkeypatch):
    """Beam 1 keeps each text's 11 best words; two templates whose 11 best are disjoint have no candidate in
    common: one line, not an empty lexicon."""
    import beluga.suites.suggest as suggest

    tok = roberta_tokenizer(ROBERTA_WORDS + [f"Ġw{i}" for i in range(22)])
    rows = {"Ġis": {f"Ġw{i}": 5.0 for i in range(11)}, "This": {f"Ġw{i}": 5.0 for i in range(11, 22)}}
    monkeypatch.setattr(suggest, "load_masked_lm", lambda spec: (Bigram(tok, rows), tok, str(tmp_path), None))
    with pytest.raises(BelugaError, match=r"field '--template': no candidate is among every template's \(beam 1\)"):
        suggest_command(["This is {mask}.", "This {mask}."], str(tmp_path), beam_size=1)
    # beam 100: every one of the 30 words in both, each printed
    out = suggest_command(["This is {mask}.", "This {mask}."], str(tmp_path), beam_size=100)
    assert "the best 30 of 30 candidates" in out and out.count("\n") == 2 + 30


# ----------------------------------------------------------------------- a spec holds the words
def test_lexicon_line_reads_back_as_the_words_in_a_spec(tmp_path):
    """The --lexicon line pasted under a spec's lexicons renders the suggested words as written (YAML would read
    007 as 7, yes as true, a:b as a mapping); several masks are a list per candidate, {pair[0]} {pair[1]}."""
    words = [("great",), ("007",), ("yes",), ("a:b",), ("naïve",)]
    line = lexicon_line("adj", words)
    assert line == "adj: [great, '007', 'yes', 'a:b', naïve]"
    pairs = lexicon_line("pair", [("very", "good"), ("so", "bad")])
    assert pairs == "pair: [[very, good], [so, bad]]"
    spec = tmp_path / "s.yaml"
    spec.write_text("spec_version: 1\nname: s\ntask: sent\ndefaults: {cases_per_functionality: 7, seed: 0}\n"
                    f"lexicons:\n  {line}\n  {pairs}\n"
                    "functionalities:\n"
                    "  - {name: f, class: C, type: MFT, expect: eq, templates: [{label: positive, templates: "
                    "['It is {adj}.']}]}\n"
                    "  - {name: g, class: C, type: MFT, expect: eq, templates: [{label: positive, templates: "
                    "['It is {pair[0]} {pair[1]}.']}]}\n", encoding="utf-8")
    suite = suite_spec.render_spec(suite_spec.load_spec(str(spec)))
    texts = {t for inputs in suite["inputs"] for t in inputs}
    assert {"It is great.", "It is 007.", "It is yes.", "It is a:b.", "It is naïve.", "It is very good.",
            "It is so bad."} <= texts


def test_the_command_prints_a_lexicon_a_spec_reads_from_a_lexicon_file(tmp_path):
    """`suite suggest --lexicon NAME` prints comment lines (the template, the model, the score) and the line;
    appended to a lexicon file, a spec's template names it."""
    folder = bias_roberta(tmp_path / "m", BIAS)
    r = beluga_cli("suite", "suggest", "--template", "This is a {mask} movie.", "--model", folder, "--top", "3",
                   "--lexicon", "movie_adj")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "# This is a {mask} movie." and lines[1].startswith(f"# model {folder}")
    assert lines[-1] == "movie_adj: [great, good, very]"
    (tmp_path / "more.yaml").write_text(r.stdout, encoding="utf-8")
    spec = tmp_path / "s.yaml"
    spec.write_text("spec_version: 1\nname: s\ntask: sent\nlexicon_files: [more.yaml]\n"
                    "functionalities:\n  - {name: f, class: C, type: MFT, expect: eq, templates: [{label: positive, "
                    "templates: ['A {movie_adj} film.']}]}\n", encoding="utf-8")
    suite = suite_spec.render_spec(suite_spec.load_spec(str(spec)), cases_per_functionality=3, seed=0)
    assert sorted(t for inputs in suite["inputs"] for t in inputs) == ["A good film.", "A great film.",
                                                                        "A very film."]


# ----------------------------------------------------------------------- refusals, each one line
@pytest.mark.parametrize("templates, message", [
    (["This is a movie."], "has no {mask}"),
    (["This is a {food} movie."], "{food} is not {mask}"),
    (["This is a {mask!r} movie."], "{mask!r} is not {mask}"),
    (["This is a {mask movie."], "is not a template"),
    (["A {mask}.", "A {mask} {mask}."], "the templates have 1, 2 masks"),
    (["A {mask}\x1b[2J."], "holds a control character"),
])
def test_bad_templates_are_refused_before_a_model_is_loaded(templates, message):
    with pytest.raises(BelugaError, match="suite suggest: field '--template': .*" + re.escape(message)):
        suggest_command(templates, "/nonexistent/model")


@pytest.mark.parametrize("name", ["1st", "a-b", "art", "sentence"])
def test_a_bad_lexicon_name_is_refused(name):
    with pytest.raises(BelugaError, match="suite suggest: field '--lexicon'"):
        suggest_command(["A {mask}."], "/nonexistent/model", lexicon=name)


def test_the_mask_token_written_in_the_template_is_refused(tmp_path):
    folder = bias_roberta(tmp_path / "m", BIAS)
    with pytest.raises(BelugaError, match=r"reads as 2 mask tokens, not 1: the text holds the model's mask token"):
        suggest_command(["This is <mask> {mask}."], str(folder))


def test_a_random_model_or_a_tokenizer_without_a_mask_token_is_refused(tmp_path):
    with pytest.raises(BelugaError, match=r"model tiny-random: field '--model': a random model"):
        suggest_command(["A {mask}."], "tiny-random")
    folder = bias_roberta(tmp_path / "m", BIAS, with_mask=False)
    with pytest.raises(BelugaError, match=rf"model {re.escape(str(folder))}: field 'tokenizer': .*no mask token"):
        suggest_command(["A {mask}."], str(folder))


def test_a_model_without_a_masked_lm_head_is_refused():
    r = beluga_cli("suite", "suggest", "--template", "A {mask}.", "--model", "default")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("error: model default: field 'head': ") and "masked language-model head" in r.stderr


def test_the_default_model_is_checklists_and_offline_uncached_is_one_line(monkeypatch, tmp_path):
    from beluga.cli.parser import build_parser

    args = build_parser().parse_args(["suite", "suggest", "--template", "A {mask}."])
    assert args.model == SUGGEST_MODEL == "roberta-base" and args.top == 50 and args.beam_size == 100
    assert args.score == "logit"
    hf_flags(monkeypatch, offline=True, hub_cache=tmp_path / "empty")
    r = beluga_cli("suite", "suggest", "--template", "A {mask}.")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("error: model 'roberta-base': field 'model': ") and "not in the Hugging Face cache" \
        in r.stderr


def test_a_template_longer_than_the_positions_is_refused(tmp_path):
    folder = bias_roberta(tmp_path / "m", BIAS)
    with pytest.raises(BelugaError, match=r"field '--template': 4\d tokens is more than the model's 38 positions"):
        suggest_command(["This is a {mask} movie." + " movie" * 40], str(folder))
