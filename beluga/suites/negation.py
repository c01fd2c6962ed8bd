"""Rule-based English negation, the perturbations ``add_negation`` and ``remove_negation`` of
:mod:`beluga.suites.perturb` (registered there by name).

Text is split into tokens -- words (with inner apostrophes or hyphens: "isn't", "re-do", "it's"), a
clitic split off by tokenised text ("it 's"), numbers and single punctuation marks -- and into
sentences at ``. ! ? ; :``.

:func:`add_negation` negates the main clause of the first sentence that has a verb it recognises,
one grammatical case per helper:

- the main clause: after a leading subordinate clause ("When I saw it, ...": :func:`_main_clause_start`);
- an auxiliary, the copula "be" or a modal: "not" after it, "is" -> "is not", "can" -> "cannot"
  (:func:`_negate_auxiliary`), a question: "Is it not good?" (:func:`_negate_question`), "have" as a
  main verb: "I do not have a dog" (:func:`_negate_have`), "do" with an object: "I did not do it"
  (:func:`_negate_do`);
- a pronoun's contraction: "it's" -> "it's not", "we'll" -> "we will not" (:func:`_negate_pronoun_contraction`),
  or a clitic of tokenised text: "it 's" -> "it 's not" (:func:`_negate_split_clitic`);
- a lexical verb of a small list, with do-support: "I loved it" -> "I did not love it"
  (:func:`_negate_lexical_verb`, its subject checked by :func:`_has_subject`), or an imperative:
  "Watch it." -> "Do not watch it." (:func:`_negate_imperative`);
- a clause that is already negated, embedded, ambiguous or has a main verb outside the list: nothing.

:func:`remove_negation` removes the first negation it finds, one case per helper: "never"
(:func:`_remove_never`), a contracted negation "isn't" / "can't" (:func:`_remove_contracted`), a split
"n't" of tokenised text "is n't" (:func:`_remove_split_nt`), "not" after an auxiliary or a pronoun's
contraction (:func:`_remove_not`); an auxiliary "do" put back on its verb: "does not like" -> "likes"
(:func:`_undo_do_support`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

_TOK_RE = re.compile(r"[A-Za-z]+(?:['\u2019-][A-Za-z]+)*|(?<=\s)['\u2019](?:s|re|m|ll|ve|d)\b|\d+|[^\w\s]")
_SENT_STOP = frozenset(".!?;:")
_AUX_NEG = {  # auxiliary -> (negated, contracted negated)
    "is": ("is not", "isn't"), "are": ("are not", "aren't"), "was": ("was not", "wasn't"),
    "were": ("were not", "weren't"), "am": ("am not", "am not"), "can": ("cannot", "can't"),
    "could": ("could not", "couldn't"), "will": ("will not", "won't"), "would": ("would not", "wouldn't"),
    "should": ("should not", "shouldn't"), "shall": ("shall not", "shan't"), "may": ("may not", "may not"),
    "might": ("might not", "might not"), "must": ("must not", "mustn't"), "has": ("has not", "hasn't"),
    "have": ("have not", "haven't"), "had": ("had not", "hadn't"), "do": ("do not", "don't"),
    "does": ("does not", "doesn't"), "did": ("did not", "didn't"),
}
_NT_AUX = {  # contracted negation -> auxiliary
    "isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "don't": "do", "doesn't": "does",
    "didn't": "did", "hasn't": "has", "haven't": "have", "hadn't": "had", "can't": "can", "cannot": "can",
    "couldn't": "could", "won't": "will", "wouldn't": "would", "shouldn't": "should", "shan't": "shall",
    "mustn't": "must", "mightn't": "might", "needn't": "need",
}
_NEG_WORDS = frozenset({"not", "never", "no", "nobody", "nothing", "none", "nowhere", "neither", "nor", "cannot"})
_PRONOUN_CONTRACTION = re.compile(r"^(i|you|we|they|he|she|it|that|there|here|what|who|where)'(s|re|m|ll|ve|d)$")
_SUBORDINATORS = frozenset({"when", "if", "although", "though", "because", "since", "while", "whilst", "after",
                            "before", "unless", "once", "until", "whenever", "whereas", "as", "even"})
_WH = frozenset({"how", "what", "why", "where", "who", "which", "whom", "whose"})
_INTRO = frozenset({"who", "whom", "whose", "which", "that", "how", "what", "when", "where", "why", "if",
                    "because", "whether"})
_SPLIT_CLITIC = frozenset({"'s", "'re", "'m"})  # tokenised text (SST-2): "it 's good"
_SUBJECTS = frozenset({"i", "you", "we", "they", "he", "she", "it", "this", "that", "everyone", "everybody",
                       "someone", "somebody"})
_STRONG_SUBJECTS = frozenset({"i", "you", "we", "they", "he", "she"})
_ARTICLES = frozenset({"a", "an", "the", "my", "your", "his", "our", "their", "its", "every", "each"})
_DETERMINERS = _ARTICLES | {"this", "that", "these", "those", "her", "no", "some", "any", "another", "such"}
_DEGREE = frozenset({"much", "well", "widely", "highly", "badly", "poorly", "very", "so", "too", "most", "more",
                     "less", "least", "beautifully", "wonderfully"})
_PRE_VERB_ADVERBS = frozenset({"really", "truly", "actually", "honestly", "genuinely", "just", "also", "always",
                               "still", "definitely", "certainly", "simply", "totally", "absolutely", "completely",
                               "thoroughly", "sincerely", "deeply", "usually", "often", "sometimes", "even",
                               "probably", "clearly", "ever", "already", "particularly", "necessarily", "quite"})
_OBJECT_STARTERS = frozenset({"it", "this", "that", "these", "those", "the", "a", "an", "me", "him", "her", "them",
                              "us", "my", "your", "his", "our", "their", "yourself", "anything", "everything"})
_DO_OBJECTS = _OBJECT_STARTERS - {"me", "him", "them", "us"} | {
    "something", "nothing", "well", "so", "badly", "fine", "good", "great", "much", "more", "what", "whatever",
    "justice", "everything", "its"}
_PARTICIPLES = frozenset("""been seen taken given written eaten fallen forgotten gotten chosen driven broken spoken
    stolen frozen hidden ridden risen shaken beaten bitten proven shown known grown thrown flown drawn worn torn
    sworn done gone made had got come become run found heard said told felt kept left lost meant met paid put read
    sent spent stood taught thought brought bought caught fought understood won sung begun sat slept built held led
    let set hit cut hurt shut sold fled""".split())
_NOT_PARTICIPLES = frozenset({"hundred", "sacred", "wicked", "naked", "kindred", "wretched", "ragged", "rugged",
                              "crooked", "beloved"})
# (base, third person singular, past) of lexical verbs for do-support; none whose past is its base ("read", "put")
_VERB_FORMS = tuple(tuple(v.split(",")) for v in """like,likes,liked love,loves,loved enjoy,enjoys,enjoyed
    hate,hates,hated dislike,dislikes,disliked admire,admires,admired adore,adores,adored
    appreciate,appreciates,appreciated recommend,recommends,recommended want,wants,wanted need,needs,needed
    know,knows,knew think,thinks,thought believe,believes,believed feel,feels,felt
    understand,understands,understood expect,expects,expected remember,remembers,remembered
    forget,forgets,forgot care,cares,cared mind,minds,minded agree,agrees,agreed seem,seems,seemed
    look,looks,looked sound,sounds,sounded deserve,deserves,deserved prefer,prefers,preferred
    trust,trusts,trusted mean,means,meant say,says,said find,finds,found go,goes,went come,comes,came
    take,takes,took give,gives,gave make,makes,made get,gets,got see,sees,saw watch,watches,watched
    play,plays,played help,helps,helped work,works,worked end,ends,ended start,starts,started
    stop,stops,stopped laugh,laughs,laughed cry,cries,cried happen,happens,happened matter,matters,mattered
    include,includes,included contain,contains,contained tell,tells,told keep,keeps,kept buy,buys,bought
    try,tries,tried live,lives,lived leave,leaves,left bring,brings,brought feature,features,featured
    manage,manages,managed succeed,succeeds,succeeded fail,fails,failed offer,offers,offered
    deliver,delivers,delivered surprise,surprises,surprised impress,impresses,impressed
    disappoint,disappoints,disappointed entertain,entertains,entertained improve,improves,improved
    hold,holds,held run,runs,ran write,writes,wrote speak,speaks,spoke regret,regrets,regretted
    despise,despises,despised detest,detests,detested miss,misses,missed fall,falls,fell grow,grows,grew
    show,shows,showed wait,waits,waited drag,drags,dragged lack,lacks,lacked have,has,had do,does,did
    win,wins,won lose,loses,lost""".split())
_VERB_FORM_OF = {form: (v[0], kind) for v in _VERB_FORMS for kind, form in zip(("base", "3sg", "past"), v)}
_DO_FOR = {"base": "do", "3sg": "does", "past": "did"}

_NEXT = object()  # sentinel: this token is not the clause's verb; look at the next one
_NO_VERB = object()  # sentinel: this sentence has no verb to negate; try the next one


def case_like(src: str, repl: str) -> str:
    """``repl`` in the case of ``src``: all upper case if ``src`` is (and longer than one letter), its first
    letter upper case if ``src``'s is."""
    if len(src) > 1 and src.isupper():
        return repl.upper()
    if src[:1].isupper():
        return repl[:1].upper() + repl[1:]
    return repl


def _norm(word: str) -> str:
    return word.lower().replace("\u2019", "'")


def _is_word(tok: str) -> bool:
    return tok[:1].isalpha() or tok[1:2].isalpha()  # a word, or a split clitic ("'s" in "it 's")


def _is_negation(tok: str) -> bool:
    w = _norm(tok)
    return w in _NEG_WORDS or w.endswith("n't")


def _is_participle(tok: str) -> bool:
    w = _norm(tok)
    return w in _PARTICIPLES or (len(w) > 4 and w.endswith("ed") and not w.endswith("eed")
                                 and w not in _NOT_PARTICIPLES)


def _tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in _TOK_RE.finditer(text)]


def _sentences(toks: list[tuple[int, int, str]]) -> list[list[tuple[int, int, str]]]:
    out, cur = [], []
    for t in toks:
        if t[2] in _SENT_STOP:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return out


# ====================================================================================== adding a negation
@dataclass
class _Clause:
    """A sentence being negated: its tokens ``sent`` (start, end, text) in ``text``, their normalised
    words, the index of its first word and of its main clause's first word, and how to write "not"."""

    text: str
    sent: list[tuple[int, int, str]]
    words: list[str]
    first: int
    start: int
    contracted: bool
    apos: str
    split: bool  # tokenised text ("is n't"): contracted negations are written split too

    def word_at(self, i: int) -> str:
        return self.words[i] if 0 <= i < len(self.words) and _is_word(self.sent[i][2]) else ""

    def next_content(self, i: int) -> int:
        """The index of the next token that is not a pre-verb adverb."""
        j = i + 1
        while j < len(self.words) and self.words[j] in _PRE_VERB_ADVERBS:
            j += 1
        return j

    def negated_before(self, i: int) -> bool:
        """A negation in the clause up to the token after ``i``."""
        return any(_is_negation(t[2]) for t in self.sent[self.start:i + 2])

    def neg(self, aux: str) -> str:
        """The negated auxiliary ("is not", or "isn't" when contracted; "is n't" in tokenised text)."""
        form = _AUX_NEG[aux][1 if self.contracted else 0]
        if self.split and form.endswith("n't"):  # tokenised text: "is n't", "ca n't"
            form = {"can't": "ca n't", "won't": "wo n't", "shan't": "sha n't"}.get(form, form[:-3] + " n't")
        return form.replace("'", self.apos)

    def replace(self, i: int, new: str) -> str:
        """The text with token ``i`` replaced by ``new`` in the token's case."""
        s, e, tok = self.sent[i]
        return self.text[:s] + case_like(tok, new) + self.text[e:]


def _main_clause_start(words: list[str], word_idx: list[int]) -> int | None:
    """The index of the main clause's first token: the first word, or the first word after the comma
    that closes a leading subordinate clause ("When I saw it, I loved it"); None when no comma closes it."""
    first = word_idx[0]  # leading quotes and brackets skipped
    if words[first] not in _SUBORDINATORS:
        return first
    if "," not in words:
        return None
    return next((i for i in word_idx if i > words.index(",")), len(words))


def _negate_question(c: _Clause, i: int):
    """A question opened by the auxiliary ``i`` ("Is it good?", "How do I ...?"): the contracted negation
    ("Isn't it good?") or "not" after a pronoun subject ("Is it not good?"); None otherwise."""
    w = c.words[i]
    if c.contracted and _AUX_NEG[w][1] != _AUX_NEG[w][0]:
        return c.replace(i, c.neg(w))
    if c.word_at(i + 1) in _SUBJECTS | {"there"} and i + 1 < len(c.sent):
        ne = c.sent[i + 1][1]
        return c.text[:ne] + case_like(c.sent[i + 1][2], " not") + c.text[ne:]
    return None


def _negate_have(c: _Clause, i: int):
    """"have" / "has" / "had": before a participle an auxiliary ("I have not seen it"), otherwise a main verb
    with do-support ("I have a dog" -> "I do not have a dog"); None before "better"."""
    j = c.next_content(i)
    if j < len(c.sent) and c.words[j] == "better":
        return None
    if j < len(c.sent) and _is_participle(c.sent[j][2]):
        return c.replace(i, c.neg(c.words[i]))
    do = {"has": "does", "have": "do", "had": "did"}[c.words[i]]
    return c.replace(i, c.neg(do) + " have")


def _negate_do(c: _Clause, i: int):
    """"do" / "does" / "did": with an object a main verb ("I did it" -> "I did not do it"), otherwise an
    auxiliary ("I do love it" -> "I do not love it")."""
    if c.word_at(i + 1) in _DO_OBJECTS:
        return c.replace(i, c.neg(c.words[i]) + " do")
    return c.replace(i, c.neg(c.words[i]))


def _negate_auxiliary(c: _Clause, i: int, prev: str, n_intro: int):
    """An auxiliary, the copula "be" or a modal (:data:`_AUX_NEG`): "not" after it ("is" -> "is not",
    "can" -> "cannot"); _NEXT when the word is not one here ("May", "a can", "the will", a relative
    clause's verb); None when the clause is already negated or embedded."""
    tok, w = c.sent[i][2], c.words[i]
    relative = prev in ("who", "which", "that") and i - 1 > c.start  # "the film, which is long, ..."
    if (tok[0].isupper() and i > c.first) or prev in _ARTICLES or relative:
        return _NEXT
    if c.negated_before(i) or n_intro >= 2:  # "a movie that reminds us how good it can be": embedded
        return None
    if i == c.start or (c.words[c.start] in _WH and i - c.start <= 3):
        return _negate_question(c, i)
    if w in ("has", "have", "had"):
        return _negate_have(c, i)
    if w in ("do", "does", "did"):
        return _negate_do(c, i)
    return c.replace(i, c.neg(w))


def _negate_pronoun_contraction(c: _Clause, i: int, m: re.Match):
    """A pronoun's contraction (``m``: pronoun, suffix): "it's" / "they're" / "I'm" -> "... not", "we'll" ->
    "we will not", "I've seen" -> "I have not seen", "I'd seen" -> "I had not seen", "I'd watch" -> "I would
    not watch"; None when already negated or when "'ve" / "'d" is not followed by a verb it knows."""
    if c.negated_before(i):
        return None
    s, e, tok = c.sent[i]
    pron, suf = tok[:len(m.group(1))], m.group(2)
    nxt = c.sent[c.next_content(i)][2] if c.next_content(i) < len(c.sent) else ""
    if suf in ("s", "re", "m"):
        return c.text[:e] + " not" + c.text[e:]
    if suf == "ll":
        return c.text[:s] + pron + " " + c.neg("will") + c.text[e:]
    if suf == "ve" and _is_participle(nxt):
        return c.text[:s] + pron + " " + c.neg("have") + c.text[e:]
    if suf == "d" and _is_participle(nxt):
        return c.text[:s] + pron + " " + c.neg("had") + c.text[e:]
    if suf == "d" and _norm(nxt) in {v[0] for v in _VERB_FORMS} | {"be"}:
        return c.text[:s] + pron + " " + c.neg("would") + c.text[e:]
    return None


def _negate_split_clitic(c: _Clause, i: int):
    """A clitic of tokenised text ("it 's good", "you 're"): "not" after it; None when already negated."""
    if c.negated_before(i):
        return None
    e = c.sent[i][1]
    return c.text[:e] + " not" + c.text[e:]


def _negate_imperative(c: _Clause, i: int, kind: str):
    """A lexical verb with no subject: an imperative opening the sentence, before an object ("Watch it." ->
    "Do not watch it."); None otherwise ("Loved it.")."""
    s, e, tok = c.sent[i]
    if c.start == c.first and i == c.first and kind == "base" and c.word_at(i + 1) in _OBJECT_STARTERS:
        return c.text[:s] + case_like(tok, c.neg("do")) + " " + tok.lower() + c.text[e:]
    return None


def _has_subject(c: _Clause, j: int, w: str, kind: str) -> bool:
    """Whether token ``j`` is the subject of the lexical verb ``w`` (of form ``kind``) that follows it: a
    pronoun, a capitalised name or noun ("Tom loves it", "Critics love it"), or a noun after a determiner
    opening the clause ("The plot makes sense"; not the base form: "a great love"; not later: "one of the
    smartest takes on ..."); never before "like" ("movies like this": a preposition)."""
    subj, subj_tok = c.word_at(j), c.sent[j][2]
    if subj in _SUBJECTS:
        return True
    if w in ("like", "likes", "liked"):
        return False
    if subj_tok[:1].isupper() and _is_word(subj_tok):
        return j == c.start or (c.word_at(j - 1)[:1] != "" and c.sent[j - 1][2][:1].isupper())
    return kind != "base" and c.word_at(j - 1) in _DETERMINERS and j - 1 == c.start


def _negate_lexical_verb(c: _Clause, i: int, prev: str, n_intro: int):
    """A lexical verb of :data:`_VERB_FORMS` after its subject, with do-support: "I loved it" -> "I did not
    love it", "I really liked it" -> "I did not really like it"; _NEXT when the word is a noun or an
    adjective ("the love story", "a much loved film") or not the main verb ("to like"); None when it has no
    subject we recognise or the clause is embedded or already negated."""
    s, e, tok = c.sent[i]
    base, kind = _VERB_FORM_OF[c.words[i]]
    if prev in _DETERMINERS or prev in _DEGREE or prev in ("to", "who", "which", "that"):
        return _NEXT
    j = i - 1
    while j >= c.start and c.words[j] in _PRE_VERB_ADVERBS:
        j -= 1
    if j < c.start:
        return _negate_imperative(c, i, kind)
    if n_intro or c.negated_before(i):
        return None
    if not _has_subject(c, j, c.words[i], kind):
        return None
    ins = c.sent[j + 1][0]
    return c.text[:ins] + c.neg(_DO_FOR[kind]) + " " + c.text[ins:s] + base + c.text[e:]


def _negate_sentence(text: str, sent, contracted: bool, apos: str):
    """The text with the main clause of ``sent`` negated; None when that is not possible
    (already negated, ambiguous); _NO_VERB when the sentence has no verb we recognise."""
    words = [_norm(t[2]) for t in sent]
    word_idx = [i for i, t in enumerate(sent) if _is_word(t[2])]
    if not word_idx:
        return _NO_VERB
    start = _main_clause_start(words, word_idx)
    if start is None:
        return None
    c = _Clause(text, sent, words, word_idx[0], start, contracted, apos,
                split=re.search(r"\sn['\u2019]t\b", text) is not None)
    n_intro = 0  # relative pronouns and other clause openers seen inside the clause
    for i in range(start, len(sent)):
        tok, w = sent[i][2], words[i]
        if not _is_word(tok):
            continue
        prev = c.word_at(i - 1) if i > start else ""
        if i > start and w in _INTRO:
            n_intro += 1
        if w in _AUX_NEG:
            out = _negate_auxiliary(c, i, prev, n_intro)
        elif m := _PRONOUN_CONTRACTION.match(w):
            out = _negate_pronoun_contraction(c, i, m)
        elif w in _SPLIT_CLITIC and i > start and (w != "'s" or prev in _SUBJECTS | {"there", "here", "what", "who"}):
            out = _negate_split_clitic(c, i)
        elif _is_negation(tok):
            out = None  # already negated
        elif w in _VERB_FORM_OF and (tok[0].islower() or i == c.first):
            out = _negate_lexical_verb(c, i, prev, n_intro)
        elif prev in _STRONG_SUBJECTS and w not in _PRE_VERB_ADVERBS:
            out = None  # "I hoped ...": a main verb we do not know
        else:
            out = _NEXT
        if out is not _NEXT:
            return out
    return _NO_VERB


def add_negation(text: str, rng: np.random.Generator, contracted: bool = False) -> list[str]:
    """Negate the main clause of the first sentence that has a verb we recognise.

    Inserts "not" after the first auxiliary, copula or modal ("is" -> "is not",
    "can" -> "cannot"; "isn't", "can't", "won't" with ``contracted``), or uses
    do-support for a lexical verb from a small list after a subject ("I loved it"
    -> "I did not love it").  A leading subordinate clause ("When ..., ") is
    skipped.  Returns [] when nothing applies, when the clause is already negated
    or when the sentence is ambiguous.  ``rng`` is unused (one deterministic result).

    >>> add_negation("The movie is great.", rng)
    ['The movie is not great.']
    >>> add_negation("She loved the ending.", rng, contracted=True)
    ["She didn't love the ending."]
    """
    apos = "\u2019" if "\u2019" in text else "'"
    for sent in _sentences(_tokens(text)):
        out = _negate_sentence(text, sent, bool(contracted), apos)
        if out is _NO_VERB:
            continue
        return [out] if out and out != text else []
    return []


# ==================================================================================== removing a negation
def _undo_do_support(text: str, toks, i: int, aux: str, aux_s: int, aux_tok: str) -> str | None:
    """The auxiliary "do" / "does" / "did" at ``aux_s`` and its negation (token ``i``) folded into the verb
    that follows, a verb of :data:`_VERB_FORMS` or "be" after "do" ("did not really like" -> "really liked",
    "Don't miss it" -> "Miss it", "Don't be silly" -> "Be silly"); None for another verb."""
    e = toks[i][1]
    j = i + 1
    while j < len(toks) and _norm(toks[j][2]) in _PRE_VERB_ADVERBS:
        j += 1
    if j < len(toks) and toks[j][2].islower() and re.fullmatch(r"\s+(?:[A-Za-z]+\s+)*", text[e:toks[j][0]]):
        verb = toks[j][2]
        forms = next((v for v in _VERB_FORMS if v[0] == verb), None)
        if forms is None and aux == "do" and verb == "be":
            forms = ("be", "is", "was")
        if forms is not None:
            new = {"do": forms[0], "does": forms[1], "did": forms[2]}[aux]
            middle = text[toks[i + 1][0]:toks[j][0]] if j > i + 1 else ""
            repl = middle + new
            if aux_tok[:1].isupper():
                repl = repl[:1].upper() + repl[1:]
            return text[:aux_s] + repl + text[toks[j][1]:]
    return None


def _restore_auxiliary(text: str, toks, i: int, aux: str, aux_s: int, aux_tok: str, neg_s: int) -> str:
    """The text without the negation token ``i`` of the auxiliary ``aux`` (written ``aux_tok`` at ``aux_s``;
    the negation starts at ``neg_s``, which is ``aux_s`` when the two are one token: "isn't" -> "is")."""
    if aux in ("do", "does", "did"):
        out = _undo_do_support(text, toks, i, aux, aux_s, aux_tok)
        if out is not None:
            return out
    e = toks[i][1]
    return text[:aux_s] + case_like(aux_tok, aux) + text[e:] if neg_s == aux_s else text[:neg_s] + text[e:]


def _remove_never(text: str, toks, i: int) -> str | None:
    """ "I have never seen it" -> "I have seen it"; a sentence-initial "Never" stays."""
    prev_tok = toks[i - 1] if i > 0 else None
    if prev_tok is None or not _is_word(prev_tok[2]):
        return None
    return text[:prev_tok[1]] + text[toks[i][1]:]


def _remove_contracted(text: str, toks, i: int) -> str:
    """A contracted negation (:data:`_NT_AUX`): "isn't" -> "is", "cannot" -> "can", "doesn't like" -> "likes"."""
    s, _, tok = toks[i]
    return _restore_auxiliary(text, toks, i, _NT_AUX[_norm(tok)], s, tok, s)


def _remove_split_nt(text: str, toks, i: int) -> str | None:
    """The "n't" of tokenised text after its auxiliary: "is n't" -> "is", "wo n't" -> "will", "does n't
    work" -> "works"."""
    s = toks[i][0]
    prev_tok = toks[i - 1] if i > 0 else None
    if prev_tok is None or not text[prev_tok[1]:s].isspace():
        return None
    pw = _norm(prev_tok[2])
    split = {"wo": "will", "ca": "can", "sha": "shall"}
    if pw not in _AUX_NEG and pw not in split:
        return None
    aux_s = prev_tok[0]
    return _restore_auxiliary(text, toks, i, split.get(pw, pw), aux_s, prev_tok[2],
                              aux_s if pw in split else prev_tok[1])


def _remove_not(text: str, toks, i: int) -> str | None:
    """ "not" after an auxiliary ("is not" -> "is", "do not like" -> "like") or after a pronoun's contraction
    ("it's not" -> "it's"); "not only ... but also" stays."""
    s, e, _ = toks[i]
    prev_tok = toks[i - 1] if i > 0 else None
    if prev_tok is None or not text[prev_tok[1]:s].isspace():
        return None
    pw = _norm(prev_tok[2])
    nxt = _norm(toks[i + 1][2]) if i + 1 < len(toks) else ""
    if nxt in ("only", "just"):
        return None  # "not only ... but also"
    if pw in _AUX_NEG or pw == "need":  # "is not" -> "is"
        return _restore_auxiliary(text, toks, i, pw, prev_tok[0], prev_tok[2], prev_tok[1])
    if (_PRONOUN_CONTRACTION.match(pw) and not pw.endswith("'d")) or pw in _SPLIT_CLITIC:  # "it's not"
        return text[:prev_tok[1]] + text[e:]
    return None


def _remove_at(text: str, toks, i: int) -> str | None:
    """The text with the negation at token ``i`` removed; None when it is not one we remove."""
    w = _norm(toks[i][2])
    if w == "never":
        return _remove_never(text, toks, i)
    if w in _NT_AUX:
        return _remove_contracted(text, toks, i)
    if w == "n't":
        return _remove_split_nt(text, toks, i)
    if w == "not":
        return _remove_not(text, toks, i)
    return None


def remove_negation(text: str, rng: np.random.Generator) -> list[str]:
    """Remove the first negation: "is not"/"isn't" -> "is", "cannot" -> "can", "won't" -> "will",
    "do not like"/"don't like" -> "like", "does not like" -> "likes", "did not like" -> "liked"
    (verbs from a small list; other verbs keep the auxiliary: "did not grok" -> "did grok"),
    "never" dropped.  "no" / "nothing" / "nobody" are left alone, and so is "not only".
    Returns [] when there is no such negation.  ``rng`` is unused (one deterministic result).

    >>> remove_negation("The acting isn't good.", rng)
    ['The acting is good.']
    >>> remove_negation("She does not like the ending.", rng)
    ['She likes the ending.']
    """
    toks = _tokens(text)
    for i in range(len(toks)):
        if _is_word(toks[i][2]):
            out = _remove_at(text, toks, i)
            if out is not None and out != text:
                return [out]
    return []
