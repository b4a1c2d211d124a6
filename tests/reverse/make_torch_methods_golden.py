"""Record PyTorch's own numbers for ``reverse.Tensor``'s PyTorch methods in
torch_methods_golden.json, beside this file.

Regenerate (from the repository root, with the PyTorch version the JSON file
names; the CPU build is enough)::

    python -m pip install torch==2.13.0
    python tests/reverse/make_torch_methods_golden.py

The expressions, and how each is run and compared (values, indices, the
gradient of a weighted sum), are in ``tests/_support/tensor_method_cases.py``;
test_rev_tensor_dialects.py checks ``reverse.Tensor`` against the file, so CI
without PyTorch still compares with PyTorch's numbers.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "torch_methods_golden.json"


def main() -> None:
    sys.path.insert(0, str(HERE.parent))  # for _support
    import torch
    from _support.tensor_method_cases import EXPRESSIONS, run
    cases = {expression: run("torch", expression) for expression in EXPRESSIONS}
    data = {"torch": torch.__version__, "cases": cases}
    text = json.dumps(data, separators=(",", ":")).replace(',"x.', ',\n"x.')
    GOLDEN.write_text(text + "\n")
    print(f"wrote {len(cases)} cases from torch {torch.__version__} to {GOLDEN}")


if __name__ == "__main__":
    main()
