"""The package layout promised in DESIGN.md and the README."""

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
