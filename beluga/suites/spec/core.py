"""Suite specs: what the checks and the rendering share. :class:`Spec` (a checked spec and the lexicons it
resolves to), where a spec's packaged files are (:data:`SPECS_DIR`, :data:`PACKAGED`), the one-line error at a
place of a spec (:func:`spec_error`), and the helpers that read a spec the same way wherever it is read: a label
by name or number (:func:`label_of`), a functionality's expectation (:func:`expectation`), a template's segments
(:func:`template_segments`), a group's lexicons and slot values (:func:`group_lexicons`, :func:`slot_values`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from beluga.core.errors import ConfigError
from beluga.core.tasks import get_task_type
from beluga.heads import head_of
from beluga.suites import templates as tpl

SPECS_DIR = Path(__file__).resolve().parents[1] / "packaged_specs"
SPEC_SCHEMA = SPECS_DIR / "spec.schema.yaml"
#: the specs shipped with the package (suite.generate: <name>)
PACKAGED = ("sent_default", "para_default", "read_default", "nli_default", "similarity_default",
            "acceptability_default")
#: rendering settings when neither the spec's defaults nor the caller set them
RENDER_DEFAULTS = {"cases_per_functionality": 50, "max_perturbations": 3, "max_words": 40, "seed": 0}
SEP = "\x1f"   # joins the two segments of a pair template while its product is enumerated
#: each spec task's template in words: a string (one sentence per input) or its two segments (a pair)
TEMPLATE_SHAPES = {"sent": "a string", "acceptability": "a string", "para": "[question 1, question 2]",
                   "read": "[context, question]", "nli": "[premise, hypothesis]",
                   "similarity": "[sentence 1, sentence 2]"}
#: a pair task's ``apply_to`` values (a perturbation changes the first segment, the second or both; none for a
#: single sentence) and the segment a perturbation changes when it does not say
APPLY_TO = {"sent": (), "acceptability": (), "para": ("first", "second", "both"),
            "read": ("context", "question", "both"), "nli": ("premise", "hypothesis", "both"),
            "similarity": ("first", "second", "both")}
PERTURBED_SEGMENT = {"para": "second", "read": "question", "nli": "hypothesis", "similarity": "second"}


@dataclass
class Spec:
    """A loaded, checked spec: its file, its data, the lexicons it resolves to (built-ins, files, its own)."""

    path: str
    data: dict
    lexicons: dict = field(default_factory=dict)

    @property
    def task(self) -> str:
        return self.data["task"]

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def functionalities(self) -> list[dict]:
        return self.data["functionalities"]

    @property
    def base_dir(self) -> Path:
        return Path(self.path).resolve().parent

    def setting(self, key: str, given=None):
        """A rendering setting: the caller's, else the spec's default, else the project's."""
        if given is not None:
            return given
        return (self.data.get("defaults") or {}).get(key, RENDER_DEFAULTS[key])

    def seed_choice(self, given: int | None, given_by: str) -> tuple[int, str]:
        """The seed the spec is rendered with (:meth:`setting`) and where it came from, in words: the caller's
        (``given``, set by ``given_by``, e.g. "--seed"), else the spec's ``defaults.seed``, else the engine's."""
        seed = int(self.setting("seed", given))
        declared = (self.data.get("defaults") or {}).get("seed")
        if given is not None:
            over = f", over the spec's defaults.seed {int(declared)}" if declared not in (None, seed) else ""
            return seed, f"{given_by}{over}"
        if declared is not None:
            return seed, "the spec's defaults.seed"
        return seed, "the engine's default: the spec has no defaults.seed"



def spec_path(spec: str) -> str:
    """A spec's file: a packaged name (:data:`PACKAGED`) or a path."""
    if spec in PACKAGED:
        return str(SPECS_DIR / f"{spec}.yaml")
    return str(spec)


def spec_location(path: str, data: dict | None, loc) -> str:
    """``<file>: functionality '<name>': field '<a.b[0]>'`` for a location in the spec."""
    loc = list(loc)
    head = f"suite spec {path}"
    if len(loc) >= 2 and loc[0] == "functionalities" and isinstance(loc[1], int):
        funcs = (data or {}).get("functionalities") or []
        name = funcs[loc[1]].get("name") if loc[1] < len(funcs) and isinstance(funcs[loc[1]], dict) else None
        head += f": functionality {name!r}" if name else f": functionality #{loc[1] + 1}"
        loc = loc[2:]
    dotted = ""
    for part in loc:
        dotted += f"[{part}]" if isinstance(part, int) else (f".{part}" if dotted else str(part))
    return f"{head}: field '{dotted or '(top level)'}'"


def spec_error(spec: Spec | tuple, loc, msg: str) -> ConfigError:
    """The one-line error ``msg`` at ``loc`` of a spec (a :class:`Spec` or its (path, data))."""
    path, data = (spec.path, spec.data) if isinstance(spec, Spec) else spec
    return ConfigError(f"{spec_location(path, data, loc)}: {msg}")


def lexicon_entries(values) -> tuple:
    """Lexicon entries as a tuple (mappings and lists kept for {x.key} / {x[0]})."""
    out = []
    for v in values:
        if isinstance(v, list):
            out.append(tuple(str(x) for x in v))
        elif isinstance(v, dict):
            out.append({str(k): str(x) for k, x in v.items()})
        else:
            out.append(str(v))
    return tuple(out)



def not_reserved(spec, loc, name) -> None:
    if name in tpl.RESERVED:
        raise spec_error(spec, loc, f"{name!r} is a reserved placeholder name ({{art}} is the article of {{a:x}}, "
                                    "{sentence} a variant's original): name the lexicon or slot otherwise")


def is_pair_task(task: str) -> bool:
    """Whether a spec task's inputs are pairs (two template segments)."""
    return bool(APPLY_TO[task])


def is_score_task(task: str) -> bool:
    """Whether a spec task's labels are gold scores and its expectations the score expectations
    (:mod:`beluga.heads.score.cases`): its head says so."""
    return head_of(get_task_type(task)).gold_is_score


def label_of(spec: Spec, value, loc, required: bool = False):
    """A label of the task (a class name or number -> its number; a regression's gold score, an integer in
    its range: the suite format's labels are integers), as the task's head reads it (None stays None, unless
    ``required``)."""
    if value is None and not required:
        return None
    ttype = get_task_type(spec.task)

    def fail(message: str):
        raise spec_error(spec, loc, message)
    return head_of(ttype).spec_label(ttype, value, fail)


def expectation(func: dict) -> tuple[str, dict]:
    """(expectation name, its parameters) of a functionality."""
    e = func["expect"]
    if isinstance(e, str):
        return e, {}
    return e["name"], {k: v for k, v in e.items() if k != "name"}


def template_segments(spec: Spec, template, loc) -> list[str]:
    """A template's segments: one for a single-sentence task (sent, acceptability), two for a pair (para, read,
    nli, similarity: :data:`TEMPLATE_SHAPES`)."""
    want = 2 if is_pair_task(spec.task) else 1
    segs = [template] if isinstance(template, str) else list(template)
    if len(segs) != want:
        raise spec_error(spec, loc, f"a {spec.task} template is {TEMPLATE_SHAPES[spec.task]}")
    return [tpl.normalise(s) for s in segs]


def group_lexicons(spec: Spec, group: dict, loc) -> dict:
    """The lexicons a template group sees: the spec's, and the group's own (a list, or a spec lexicon's name)."""
    lex = dict(spec.lexicons)
    for name, value in (group.get("lexicons") or {}).items():
        not_reserved(spec, [*loc, "lexicons", name], name)
        if isinstance(value, str):
            if value not in spec.lexicons:
                raise spec_error(spec, [*loc, "lexicons", name], f"{value!r} is not a lexicon")
            lex[name] = spec.lexicons[value]
        else:
            lex[name] = lexicon_entries(value)
    return lex


def slot_values(spec: Spec, lex: dict, values, loc) -> tuple:
    """The values of a fill_slot / swap_slot: a list, or a lexicon's name."""
    if isinstance(values, str):
        if values not in lex:
            raise spec_error(spec, loc, f"{values!r} is not a lexicon")
        return tuple(lex[values])
    return lexicon_entries(values)


#: the kinds of perturbation parameters that take a word list (a lexicon's name or a list)
WORD_LIST_KINDS = ("words", "pairs", "groups")


def is_source_lexicon(value) -> bool:
    """A lexicon defined as {source: name, max: N}, resolved with the sources when the suite is rendered."""
    return isinstance(value, tuple) and len(value) == 3 and value[0] == "source" \
        and isinstance(value[2], (int, type(None)))


