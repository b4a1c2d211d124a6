"""Run every asv benchmark under benchmarks/ once, at its smallest parameters.

Benchmarks are found the way asv finds them (every module of the
``benchmarks`` package, every public class and function named ``time_*``,
``timeraw_*``, ``track_*``, ``mem_*`` or ``peakmem_*``), so a benchmark
file added later is smoke-run without touching this test. The first value
of each ``params`` list is taken as the smallest. A ``setup`` that raises
``NotImplementedError`` skips that combination, as in asv.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "benchmarks"
BENCH_NAME = re.compile(r"^(time|timeraw|track|mem|peakmem)_")


def _bench_package():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    package = importlib.import_module("benchmarks")
    where = Path(package.__file__).resolve().parent
    assert where == BENCH_DIR, f"'benchmarks' was imported from {where}, expected {BENCH_DIR}"
    return package


def _modules():
    package = _bench_package()
    names = [info.name for info in pkgutil.walk_packages(package.__path__, "benchmarks.")]
    return [importlib.import_module(name) for name in sorted(names)]


def _cases():
    """(id, module, class or None, method name) for every benchmark."""
    cases = []
    for module in _modules():
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue  # private, or imported from elsewhere (asv would list it twice)
            if inspect.isclass(obj):
                for name, _ in inspect.getmembers(obj, inspect.isfunction):
                    if BENCH_NAME.match(name):
                        cases.append((f"{module.__name__}.{attr}.{name}", module, obj, name))
            elif inspect.isfunction(obj) and BENCH_NAME.match(attr):
                cases.append((f"{module.__name__}.{attr}", module, None, attr))
    return cases


CASES = _cases()


def _first_attr(name, *sources):
    for source in sources:
        value = getattr(source, name, None)
        if value is not None:
            return value
    return None


def _smallest(params):
    """The first value of each parameter (asv accepts one flat list for one parameter)."""
    if params is None or (isinstance(params, (list, tuple)) and len(params) == 0):
        return []
    if not isinstance(params[0], (list, tuple)):
        params = [params]
    return [values[0] for values in params]


@pytest.fixture
def quick_ratios(monkeypatch):
    """Let track_* ratio timers take one short sample per side."""
    common = sys.modules.get("benchmarks.common")
    if common is not None:
        if hasattr(common, "RATIO_REPEAT"):
            monkeypatch.setattr(common, "RATIO_REPEAT", 1)
        if hasattr(common, "RATIO_SAMPLE_S"):
            monkeypatch.setattr(common, "RATIO_SAMPLE_S", 0.0)


def test_benchmarks_were_found():
    assert any(name.startswith("benchmarks.bench_forward.") for name, *_ in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_benchmark_runs_once(case, quick_ratios):
    name, module, klass, method = case
    owner = klass() if klass is not None else None
    func = getattr(owner, method) if owner is not None else getattr(module, method)
    raw_func = getattr(klass, method) if klass is not None else func
    args = _smallest(_first_attr("params", raw_func, klass, module))

    setup_cache = _first_attr("setup_cache", raw_func, owner, module)
    if setup_cache is not None:
        args = [setup_cache(), *args]
    setup = _first_attr("setup", raw_func, owner, module)
    teardown = _first_attr("teardown", raw_func, owner, module)
    if setup is not None:
        try:
            setup(*args)
        except NotImplementedError:
            pytest.skip(f"{name}: setup raised NotImplementedError for {args} (asv: skip)")
    try:
        result = func(*args)
        if method.startswith("timeraw_"):  # asv runs the returned code in a fresh process
            code, code_setup = (result, "") if isinstance(result, str) else result
            namespace: dict = {}
            exec(code_setup, namespace)
            exec(code, namespace)
        elif method.startswith("track_"):
            assert isinstance(result, (int, float)), f"{name} returned {result!r}, not a number"
            assert result == result, f"{name} returned NaN"
    finally:
        if teardown is not None:
            teardown(*args)
