"""Record PyTorch's numbers for the seed's training loop (``tests/_support/nn_case.py``)
in torch_nn_golden.json, beside this file: the initial weights PyTorch drew, the
losses, the first step's gradients and the final weights.

Regenerate (from the repository root, with the PyTorch version the file names)::

    python -m pip install torch==2.13.0
    PYTHONPATH=. python tests/reverse/make_torch_nn_golden.py

test_rev_nn.py starts ``reverse.nn`` from the same weights and compares.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "torch_nn_golden.json"


def main() -> None:
    sys.path.insert(0, str(HERE.parent))  # for _support
    import torch
    from _support.nn_case import model_class, run

    torch.manual_seed(0)
    torch.set_default_dtype(torch.float64)
    initial = {k: v.tolist() for k, v in model_class(torch.nn)(10, 5, 1).state_dict().items()}
    result = run(torch.nn, torch.optim, lambda a: torch.tensor(a, dtype=torch.float64), initial)
    data = {"torch": torch.__version__, "initial": initial, **result}
    GOLDEN.write_text(json.dumps(data) + "\n")
    print(f"wrote {GOLDEN} from torch {torch.__version__}")


if __name__ == "__main__":
    main()
