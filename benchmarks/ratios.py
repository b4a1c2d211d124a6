"""Print every ``track_*`` of the suite at every parameter, without asv.

Run from the repository root::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.ratios            # everything
    OPENBLAS_NUM_THREADS=1 python -m benchmarks.ratios -b ForwardJVP -b HyperDual

The output is a Markdown table headed by the machine, NumPy version and
BLAS thread setting, ready for README.md. Benchmarks are found as asv finds
them, so modules added later are included.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import itertools
import os
import pkgutil
import platform
import re
import sys
import time

_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _track_methods(package):
    for info in sorted(pkgutil.walk_packages(package.__path__, package.__name__ + "."),
                       key=lambda i: i.name):
        module = importlib.import_module(info.name)
        for attr, klass in vars(module).items():
            if (attr.startswith("_") or not inspect.isclass(klass)
                    or klass.__module__ != module.__name__):
                continue
            for name, _ in inspect.getmembers(klass, inspect.isfunction):
                if name.startswith("track_"):
                    yield f"{module.__name__.rsplit('.', 1)[-1]}.{attr}.{name}", klass, name


def _combinations(klass):
    params = getattr(klass, "params", None) or []
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]
    names = getattr(klass, "param_names", None) or [f"p{i}" for i in range(len(params))]
    for values in itertools.product(*params):
        yield dict(zip(names, values)), list(values)


def _cpu() -> str:
    """platform.processor(), or the model name Linux reports when that is empty."""
    name = platform.processor()
    if not name and os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as fh:
            name = next((line.split(":", 1)[1].strip() for line in fh
                         if line.startswith("model name")), "")
    return f"{name or '?'} {platform.machine()}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-b", "--bench", action="append", default=[],
                        help="regex on 'module.Class.method' (repeatable; default: all)")
    args = parser.parse_args(argv)

    import numpy as np

    import benchmarks

    blas = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in _BLAS_VARS)
    print(f"machine: {_cpu()}, {os.cpu_count()} CPUs; "
          f"Python {platform.python_version()}, NumPy {np.__version__}; {blas}\n")
    print("| benchmark | parameters | value | unit |")
    print("| --- | --- | --- | --- |")
    start = time.perf_counter()
    for name, klass, method in _track_methods(benchmarks):
        if args.bench and not any(re.search(b, name) for b in args.bench):
            continue
        unit = getattr(getattr(klass, method), "unit", "unit")
        for labels, values in _combinations(klass):
            owner = klass()
            if hasattr(owner, "setup"):
                try:
                    owner.setup(*values)
                except NotImplementedError:
                    continue
            try:
                value = getattr(owner, method)(*values)
            finally:  # as asv does: bench_dask's teardown stops its cluster
                if hasattr(owner, "teardown"):
                    owner.teardown(*values)
            shown = ", ".join(f"{k}={v}" for k, v in labels.items()) or "-"
            print(f"| {name} | {shown} | {value:.3g} | {unit} |", flush=True)
    print(f"\n({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
