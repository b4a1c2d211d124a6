"""Every ```python block of README.md runs as written, each in a fresh namespace: a
snippet that needs an import the reader cannot see fails here."""

import linecache
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list:
    """(first line number, source) of each ```python block."""
    text = README.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M)]


def test_the_readme_has_python_blocks():
    assert len(_blocks()) >= 4


@pytest.mark.parametrize("line, source", _blocks(), ids=[f"README.md:{line}" for line, _ in _blocks()])
def test_readme_block_runs(line, source):
    if "import dask" in source:
        pytest.importorskip("dask.array")
    if "from scipy" in source:
        pytest.importorskip("scipy")
    name = f"README.md:{line}"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # for tracebacks
    exec(compile(source, name, "exec"), {"__name__": "readme"})  # noqa: S102
