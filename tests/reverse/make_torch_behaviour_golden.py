"""Record what PyTorch's autograd does in the scenarios of
``tests/_support/torch_scenarios.py`` (hook order, grad modes, saved tensor
hooks, ``.grad``'s identity, once_differentiable, the Tensor methods' shapes,
errors and states) in torch_behaviour_golden.json, beside this file.

Regenerate (from the repository root, with the PyTorch version the JSON file
names; the CPU build is enough; it must see this checkout)::

    python -m pip install torch==2.13.0
    PYTHONPATH=. python tests/reverse/make_torch_behaviour_golden.py

The tests in tests/reverse run the same scenarios on ``reverse`` and compare
with the file, so CI without PyTorch still checks against PyTorch.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "torch_behaviour_golden.json"


def main() -> None:
    sys.path.insert(0, str(HERE.parent))  # for _support
    import warnings

    import torch
    from _support.torch_scenarios import SCENARIOS, torch_kit
    kit = torch_kit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's x.T on 3-d is deprecated
        cases = {name: scenario(kit) for name, scenario in SCENARIOS.items()}
    data = {"torch": torch.__version__, "cases": cases}
    GOLDEN.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(cases)} scenarios from torch {torch.__version__} to {GOLDEN}")


if __name__ == "__main__":
    main()
