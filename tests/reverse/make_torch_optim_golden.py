"""Record PyTorch's own numbers for ``reverse.optim`` in torch_optim_golden.json, beside this file.

Regenerate (from the repository root, with the PyTorch version the JSON file
names; the CPU build is enough)::

    python -m pip install torch==2.13.0
    python tests/reverse/make_torch_optim_golden.py

The cases (optimizers with their options and parameter groups, maximize=
and complex parameters, L-BFGS on Rosenbrock, every learning-rate scheduler
with a resume from state dicts, gradient clipping) are defined in
``tests/_support/optim_cases.py``, which also runs them; the file holds each
case with what PyTorch computed. test_rev_optim_torch.py checks
``reverse.optim`` against it, so CI without PyTorch still compares with
PyTorch's numbers.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "torch_optim_golden.json"


def main() -> None:
    sys.path.insert(0, str(HERE.parent))  # for _support
    import torch
    from _support.optim_cases import cases, run_case, torch_lib
    lib = torch_lib()
    results = [{**case, "result": run_case(lib, case)} for case in cases()]
    data = {"torch": torch.__version__, "cases": results}
    text = json.dumps(data, separators=(",", ":")).replace('{"kind"', '\n{"kind"')  # a line a case
    GOLDEN.write_text(text + "\n")
    print(f"wrote {len(data['cases'])} cases from torch {torch.__version__} to {GOLDEN}")


if __name__ == "__main__":
    main()
