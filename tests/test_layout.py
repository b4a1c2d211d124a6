"""The package layout described in ARCHITECTURE.md: floors that import downwards only,
no import cycles anywhere, and upper packages that use dualad's public contract."""

import ast
import pathlib
import re
import subprocess
import sys

import pytest

import dualad
import mixed
import reverse

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("package, forbidden", [
    ("dualad", ["reverse", "mixed"]),
    ("reverse", ["mixed"]),
])
def test_dependencies_point_one_way(package, forbidden):
    code = (f"import sys, {package}; "
            f"bad = [m for m in {forbidden!r} if m in sys.modules]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing {package} imported {out.stdout.strip()}"


def _imports(package: str):
    """(file, line, module) of every import in the package's files, nested ones too."""
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                yield path.relative_to(ROOT), node.lineno, node.module
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield path.relative_to(ROOT), node.lineno, alias.name


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


@pytest.mark.parametrize("package, lower", [("reverse", ["dualad"]), ("mixed", ["dualad", "reverse"])])
def test_upper_layers_use_only_the_public_contract_below(package, lower):
    """reverse and mixed import dualad's public modules only (the interpreter contract,
    dualad.extend, the transforms), and mixed imports reverse's public names only."""
    bad = [f"{file}:{line} imports {module}" for file, line, module in _imports(package)
           if module.split(".")[0] in lower and _private(module)]
    assert not bad, "\n".join(bad)


def test_dualad_never_imports_the_layers_above_it_even_lazily():
    """Not by an import, nor by loading a module by name (importlib): only the two aliases
    (dualad/reverse.py, dualad/mixed.py) load the upper packages, and no module of dualad
    loads the aliases."""
    graph = module_graph()
    bad = [f"{m} imports {t}" for m, edges in graph.items() if m.startswith("dualad") for t in edges
           if t.split(".")[0] in ("reverse", "mixed") and m not in ("dualad.reverse", "dualad.mixed")
           or t in ("dualad.reverse", "dualad.mixed")]
    bad += [f"{file}:{line} imports {module}" for file, line, module in _imports("dualad")
            if module.split(".")[0] in ("reverse", "mixed")]
    assert not bad, "\n".join(bad)
    assert graph["dualad.reverse"].keys() & {"reverse"} and graph["dualad.mixed"].keys() & {"mixed"}


@pytest.mark.parametrize("module", [dualad, reverse, mixed])
def test_public_names_exist(module):
    for name in module.__all__:
        assert hasattr(module, name), f"{module.__name__}.__all__ names {name}, which is missing"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    assert len(commands) >= 2, "the README opens with two commands"
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1].strip() in ci, "the CI script must run the README's test command"
    assert "ruff check ." in commands[1], "the test command lints too (ruff is in the test extras)"


def test_dualad_reverse_and_dualad_mixed_are_the_packages_themselves():
    code = ("import sys, dualad; assert 'reverse' not in sys.modules and 'mixed' not in sys.modules; "
            "import dualad.reverse.optim, dualad.mixed; import reverse, reverse.optim, mixed; "
            "from dualad.reverse.optim import Adam; "
            "assert dualad.reverse is reverse and dualad.mixed is mixed; "
            "assert dualad.reverse.optim is reverse.optim and Adam is reverse.optim.Adam; "
            "print(dualad.reverse.grad(lambda x: x * x)(3.0))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "6.0"


# -- floors and cycles -------------------------------------------------------------------------
# Lowest first. A module imports modules of its own floor or of floors below it, never above.
FLOORS = [
    ("base", ["dualad._base"]),
    ("table", ["dualad._table"]),
    ("primitives", ["dualad._primitives"]),
    ("numpy composites", ["dualad._numpy"]),
    ("the namespace that gathers them", ["dualad.ops"]),
    ("the value types' array-like protocol", ["dualad._numpy.arraylike", "dualad._numpy.buffer",
                                              "dualad.numpy"]),
    ("modes and programs", ["dualad._forward", "dualad._batching", "dualad._program"]),
    ("staging", ["dualad._staging"]),
    ("implicit functions", ["dualad._implicit"]),
    ("sparse derivatives", ["dualad._sparse"]),
    ("solutions of ODEs", ["dualad._ode"]),
    ("public API", ["dualad", "dualad.extend", "dualad.interpreter", "dualad.testing", "dualad._alias"]),
    ("reverse", ["reverse"]),
    ("mixed", ["mixed"]),
    # the upper packages under dualad's name, loaded only when a user asks for them
    ("aliases", ["dualad.reverse", "dualad.mixed"]),
]
# The calls that load a module named by a string: edges of the module graph as imports are.
_LOADERS = {"import_module": 0, "become": 1}


def _floor(module: str) -> int:
    """The floor of ``module``: that of the longest prefix FLOORS names."""
    best, found = -1, None
    for n, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), n
    assert found is not None, f"{module} is on no floor of FLOORS: add it"
    return found


def module_graph(packages=("dualad", "reverse", "mixed")) -> dict:
    """Module -> {imported module: line}, for every import in the packages' modules (those
    inside functions too: a lazy import that breaks a cycle is still a cycle)."""
    files = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            files[name] = path
    graph = {}
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = graph[name] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif _loaded(node) is not None:
                targets = [_loaded(node)]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[:len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            for target in targets:
                if target in files and target != name:
                    edges.setdefault(target, node.lineno)
    return graph


def _loaded(node: ast.AST) -> str | None:
    """The module a call such as ``importlib.import_module("reverse")`` or
    ``become(__name__, "reverse")`` loads, where ``node`` is one."""
    if not isinstance(node, ast.Call):
        return None
    name = getattr(node.func, "attr", getattr(node.func, "id", None))
    at = _LOADERS.get(name)
    if at is None or len(node.args) <= at or not isinstance(node.args[at], ast.Constant):
        return None
    return node.args[at].value


def floor_violations(graph: dict) -> list:
    return [f"{m} ({FLOORS[_floor(m)][0]}) imports {t} ({FLOORS[_floor(t)][0]}) at line {line}"
            for m, edges in graph.items() for t, line in edges.items() if _floor(t) > _floor(m)]


def import_cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_every_module_imports_only_its_own_floor_or_lower():
    violations = floor_violations(module_graph())
    assert not violations, "\n".join(violations)


def test_no_import_cycles_not_even_lazy_ones():
    cycles = import_cycles(module_graph())
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checks_fail_on_a_planted_violation():
    graph = module_graph()
    graph["dualad._table.entries"] = {**graph["dualad._table.entries"], "dualad.ops": 1}  # upwards
    planted = "dualad._table.entries (table) imports dualad.ops"
    assert any(v.startswith(planted) for v in floor_violations(graph))
    graph["dualad._base.core"] = {**graph["dualad._base.core"], "dualad._base.shapes": 1}  # a loop
    assert ["dualad._base.core", "dualad._base.shapes"] in import_cycles(graph)


def test_modes_and_programs_do_not_import_one_another():
    """_forward, _batching and _program share a floor and are independent (ARCHITECTURE.md)."""
    siblings = ("dualad._forward", "dualad._batching", "dualad._program")
    side = [f"{m} imports {t}" for m, edges in module_graph().items() for t in edges
            for a in siblings for b in siblings
            if a != b and m.startswith(a + ".") and t.startswith(b + ".")]
    assert not side, "\n".join(side)


def test_architecture_md_names_only_paths_that_exist_and_the_readme_links_it():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    paths = set(re.findall(r"\b((?:dualad|reverse|mixed|tests|docs|benchmarks|examples)/[\w/.]*\w/?)", text))
    assert len(paths) > 30, "the map names the files it describes"
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"
    assert "(ARCHITECTURE.md)" in (ROOT / "README.md").read_text()


# -- every interpreter asks the entry -------------------------------------------------------
# What a value type answers for itself (dualad._base.core.Value): probing a value for one of
# these with hasattr is asking which kind it is; isinstance(x, Value) asks that plainly.
_VALUE_PROTOCOL = frozenset(n for n in vars(dualad.interpreter.Value) if n.startswith("_")
                            and not n.startswith("__"))


def _names_an_entry(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("prim", "primitive")) or (
        isinstance(node, ast.Attribute) and node.attr in ("prim", "primitive"))


def questions_by_kind(source: str) -> list:
    """``(line, what)`` for each place ``source`` decides by an entry's name
    (``prim.name == "sum"``) or class (``isinstance(prim, Elementwise)``), or probes a value
    for the value types' protocol (``hasattr(x, "_strip")``), instead of reading a fact the
    entry declares (``Primitive.declare``) or asking ``isinstance(x, Value)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            if any(isinstance(side, ast.Attribute) and side.attr == "name" and _names_an_entry(side.value)
                   for side in [node.left, *node.comparators]):
                found.append((node.lineno, "compares an entry's name"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id == "isinstance" and _names_an_entry(node.args[0]):
                found.append((node.lineno, "asks an entry's class"))
            elif node.func.id == "hasattr" and len(node.args) == 2 \
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in _VALUE_PROTOCOL:
                found.append((node.lineno, f"probes a value for {node.args[1].value}"))
    return found


def test_interpreters_ask_the_entry_not_its_name_or_class():
    """Outside dualad/_table (where the kinds of entry are defined), no module decides by an
    entry's name or class, and none probes a value for the value types' protocol."""
    found = [f"{path.relative_to(ROOT)}:{line}: {what}"
             for package in ("dualad", "reverse", "mixed")
             for path in sorted((ROOT / package).rglob("*.py"))
             if path.relative_to(ROOT).parts[:2] != ("dualad", "_table")
             for line, what in questions_by_kind(path.read_text())]
    assert not found, "\n".join(found)


def test_the_question_check_fails_on_planted_questions():
    planted = ("if step.prim.name == 'sum':\n    pass\n"
               "ok = isinstance(prim, Elementwise)\n"
               "probe = hasattr(x, '_strip')\n"
               "fine = hasattr(x, 'shape') and prim.ufunc == 'add'\n")
    assert [line for line, _ in questions_by_kind(planted)] == [1, 3, 4]
