"""Compiled kernels are kept in a per-user cache folder, never inside the installed package.

A non-editable install once had Numba's ``.nbi``/``.nbc`` files written into
``site-packages/dualad/_forward/__pycache__``; a later ``pip install -e .``
left that folder behind, and it shadowed the editable install as an empty
namespace package.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dualad
from dualad._base import kernel_cache

pytest.importorskip("numba")

ROOT = pathlib.Path(__file__).resolve().parents[3]
PACKAGE = pathlib.Path(dualad.__file__).resolve().parent

# Compiles the two kinds of Numba code dualad has: a colouring loop (a function of a
# module of the package) and a generated kernel of a compiled program.
SCRIPT = textwrap.dedent("""
    import json, numpy as np, dualad
    from dualad._sparse import coloring
    from dualad._program.executors import numba as numba_executor
    colors = dualad.color_columns(np.eye(4) + np.eye(4, k=1), native=True)
    f = dualad.compile(lambda x: np.sum(np.cos(x[1:]) * x[:-1] - 0.25), executor="numba")
    x = np.linspace(0.0, 1.0, 17)
    f(x)  # traced: the kernel is compiled at the first replay
    value = float(f(x))
    dispatchers = [coloring._compiled[coloring._dsatur_loop], *numba_executor._KERNELS.values()]
    print(json.dumps({"colors": colors.tolist(), "value": value,
                      "hits": [sum(d.stats.cache_hits.values()) for d in dispatchers],
                      "misses": [sum(d.stats.cache_misses.values()) for d in dispatchers]}))
""")


def _numba_files(folder: pathlib.Path) -> dict:
    return {p: p.stat().st_mtime_ns for pattern in ("*.nbi", "*.nbc") for p in folder.rglob(pattern)}


def _run(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_kernels_are_kept_in_dualad_cache_dir_and_not_in_the_package(tmp_path):
    ours, numbas = tmp_path / "dualad", tmp_path / "numba"
    # NUMBA_CACHE_DIR is the user's setting for their own code: dualad's kernels keep to
    # DUALAD_CACHE_DIR whatever it says.
    env = {**os.environ, "DUALAD_CACHE_DIR": str(ours), "NUMBA_CACHE_DIR": str(numbas),
           "PYTHONPATH": str(ROOT)}
    before = _numba_files(PACKAGE)
    first = _run(env)
    assert _numba_files(PACKAGE) == before, "Numba wrote into the installed package"
    indexes = sorted(p.name for p in ours.rglob("*.nbi"))
    assert any(name.startswith("coloring._dsatur_loop") for name in indexes), indexes
    assert any(name.startswith("k") and ".kernel-" in name for name in indexes), indexes
    assert not numbas.exists() or not _numba_files(numbas)
    assert first["misses"] == [1, 1] and first["hits"] == [0, 0]  # compiled, and saved
    second = _run(env)
    assert second["misses"] == [0, 0] and second["hits"] == [1, 1]  # loaded from the folder
    assert second["colors"] == first["colors"] and second["value"] == first["value"]
    assert _numba_files(PACKAGE) == before


def test_the_users_own_cache_true_functions_keep_numbas_settings(tmp_path):
    """dualad changes nothing global: a user's ``cache=True`` function, compiled after
    dualad's, is cached where Numba's own settings say (here NUMBA_CACHE_DIR)."""
    user = tmp_path / "user_module.py"
    user.write_text("import numba\n\n@numba.njit(cache=True)\ndef twice(a):\n    return 2 * a\n")
    script = ("import numpy as np, dualad, user_module\n"
              "dualad.color_columns(np.eye(3), native=True)\n"
              "assert user_module.twice(2) == 4\n")
    env = {**os.environ, "DUALAD_CACHE_DIR": str(tmp_path / "dualad"),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, check=True, timeout=300)
    assert [p.name for p in (tmp_path / "numba").rglob("*.nbi")] == ["user_module.twice-3.py%d%d.nbi"
                                                                    % sys.version_info[:2]]
    assert not any("user_module" in p.name for p in (tmp_path / "dualad").rglob("*"))


def test_an_unwritable_cache_folder_compiles_in_memory(tmp_path, monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("DUALAD_CACHE_DIR", str(blocked))

    def plus_one(a):
        return a + 1

    assert kernel_cache._disk_cache(plus_one) is None
    assert kernel_cache.njit(plus_one)(np.arange(3)).tolist() == [1, 2, 3]
    assert not blocked.read_text()


@pytest.mark.parametrize("platform, environ, expected", [
    ("linux", {"XDG_CACHE_HOME": "/xdg"}, "/xdg/dualad"),
    ("linux", {}, "~/.cache/dualad"),
    ("linux", {"XDG_CACHE_HOME": "relative"}, "~/.cache/dualad"),  # the XDG spec ignores relative
    ("darwin", {"XDG_CACHE_HOME": "/xdg"}, "~/Library/Caches/dualad"),
    ("win32", {"LOCALAPPDATA": "C:/Users/u/AppData/Local"}, "C:/Users/u/AppData/Local/dualad"),
    ("win32", {}, "~/AppData/Local/dualad"),
    ("linux", {"DUALAD_CACHE_DIR": "/mine", "XDG_CACHE_HOME": "/xdg"}, "/mine"),
    ("win32", {"DUALAD_CACHE_DIR": "~/mine"}, "~/mine"),
])
def test_the_cache_folder_is_the_platforms(platform, environ, expected, monkeypatch):
    for name in ("DUALAD_CACHE_DIR", "XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "platform", platform)
    got = pathlib.PurePath(kernel_cache.cache_root())
    assert got == pathlib.PurePath(os.path.expanduser(expected))
