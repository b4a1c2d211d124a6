"""The package layout promised in DESIGN.md and the README."""

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
    bad = [f"{file}:{line} imports {module}" for file, line, module in _imports("dualad")
           if module.split(".")[0] in ("reverse", "mixed")]
    assert not bad, "\n".join(bad)


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
