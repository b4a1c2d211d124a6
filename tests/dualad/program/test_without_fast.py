"""Without the ``fast`` extra (Numba, numexpr) compiled programs replay on the NumPy executor.

Each check runs in a fresh interpreter where ``import numba`` and ``import numexpr``
fail, as where they are not installed: the programs the automatic choice gives Numba's
kernels elsewhere (a long chain of a few numbers, Rosenbrock's gradient at 1e5) replay as
a NumPy call per step with eager evaluation's numbers, asking for either raises an
ImportError that says what to install, and the compiled examples run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent("""
    import json, runpy, sys
    sys.modules["numba"] = sys.modules["numexpr"] = None  # as if not installed
    import numpy as np
    import dualad, reverse
    from benchmarks.common import op_chain, rosenbrock

    out = {}
    for name, f, x in [("chain", reverse.grad(op_chain), np.linspace(0.1, 0.9, 16)),
                       ("rosenbrock", reverse.grad(rosenbrock), np.linspace(-1.0, 1.0, 100_000))]:
        compiled = dualad.compile(f)
        got = [compiled(x * s) for s in (1.0, 0.5, 0.25)]
        want = [f(x * s) for s in (1.0, 0.5, 0.25)]
        out[name] = {"executor": compiled.stats["executor"],
                     "equal": all(np.array_equal(g, w) for g, w in zip(got, want))}
    for kwargs in ({"executor": "numba"}, {"fuse": True}):
        try:
            dualad.compile(op_chain, **kwargs)
            out[str(kwargs)] = "no error"
        except ImportError as err:
            out[str(kwargs)] = str(err)
    for example in ("compile_static_graph", "compile_fuse_and_preallocate"):
        result = runpy.run_path(f"examples/{example}.py")["main"](1000, verbose=False)
        out[example] = result
    print(json.dumps(out, default=float))
""")


def test_compiled_programs_and_examples_without_numba_or_numexpr():
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    for name in ("chain", "rosenbrock"):
        assert out[name] == {"executor": "numpy", "equal": True}, (name, out[name])
    assert 'executor="numba" needs Numba: pip install "dualad[fast]"' in out["{'executor': 'numba'}"]
    assert 'fuse=True needs numexpr: pip install "dualad[fast]"' in out["{'fuse': True}"]
    static = out["compile_static_graph"]
    assert all(static[k]["worst"] <= 1e-12 for k in ("scaled_sum", "gradient")), static
    fused = out["compile_fuse_and_preallocate"]
    assert fused["worst"] <= 1e-10 and fused["kernels"] == 0, fused
