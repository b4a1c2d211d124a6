"""``reverse.optim`` against PyTorch's own numbers.

Recorded: torch_optim_golden.json, written by make_torch_optim_golden.py (its
docstring says how to regenerate it), so CI without PyTorch compares too.
Live: where ``torch`` imports, every case runs in PyTorch as well. Both run the
same PyTorch-style code (``_support.optim_cases``) on each library.
"""

import json
import pathlib

import numpy as np
import pytest
from _support.optim_cases import cases, run_case, torch_lib
from _support.optim_problem import REVERSE

GOLDEN = json.loads((pathlib.Path(__file__).parent / "torch_optim_golden.json").read_text())
CASES = GOLDEN["cases"]

# (rtol, atol) by kind and dtype: what rounding in another order leaves after a few steps.
# L-BFGS's line search interpolates between close points, which magnifies rounding
# differences (to 1e-9 by the 21st evaluation of one float64 case); in float32 the two drift
# apart by float32 rounding as any two implementations would, so its recorded run is short.
TOLERANCES = {"float64": (1e-12, 1e-14), "float32": (2e-6, 1e-7),
              "complex128": (1e-12, 1e-14), "complex64": (2e-6, 1e-7),
              ("lbfgs", "float64"): (1e-9, 2e-9), ("lbfgs", "float32"): (2e-6, 1e-7)}


def case_id(case):
    name = {"first_order": case.get("optimizer"), "complex": case.get("optimizer"),
            "clip": case.get("function"), "lbfgs": "LBFGS",
            "scheduler": "+".join(name for name, _ in case.get("schedulers", []))}[case["kind"]]
    options = {k: v for k, v in case.items() if k in ("options", "groups") and v} or ""
    return f"{name}-{case.get('dtype', '')}-{options}"


def check(case, got, want):
    dtype = case.get("dtype", "float64")
    rtol, atol = TOLERANCES.get((case["kind"], dtype), TOLERANCES[dtype])
    assert got.keys() == want.keys()
    for key in want:
        if want[key] is None:
            assert got[key] is None, key
            continue
        assert np.shape(got[key]) == np.shape(want[key]), f"{key}: {np.shape(got[key])} entries, " \
                                                           f"PyTorch's {np.shape(want[key])}"
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=key)


EACH = pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])


@EACH
def test_matches_the_recorded_pytorch_numbers(case):
    check(case, run_case(REVERSE, case), case["result"])


def test_matches_pytorch_run_now():
    """Beside the recording: every case against the PyTorch installed now (one test, so
    CI without PyTorch reports one skip, not one per case)."""
    pytest.importorskip("torch")
    lib = torch_lib()
    for case in CASES:
        check(case, run_case(REVERSE, case), run_case(lib, case))


def test_the_recording_holds_the_current_cases():
    """The JSON file was written from the cases as they are now (regenerate after a change)."""
    assert [{k: v for k, v in c.items() if k != "result"} for c in CASES] == json.loads(json.dumps(cases()))


def test_the_recording_is_pytorchs():
    """Where the recorded PyTorch version is installed, it computes the recorded numbers."""
    torch = pytest.importorskip("torch")
    if torch.__version__ != GOLDEN["torch"]:
        pytest.skip(f"the recording is from torch {GOLDEN['torch']}, this is {torch.__version__}")
    lib = torch_lib()
    for case in CASES:
        assert run_case(lib, case) == case["result"], case_id(case)
