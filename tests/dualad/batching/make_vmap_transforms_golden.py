"""Record JAX's ``vmap`` of each transform in vmap_transforms_golden.json, beside this file.

Regenerate (from the repository root, in a virtual environment, never in the
system Python, with the JAX version the JSON file names)::

    python3 -m venv --system-site-packages /tmp/jaxenv
    /tmp/jaxenv/bin/pip install jax==0.10.2 jaxlib==0.10.2
    /tmp/jaxenv/bin/python tests/dualad/batching/make_vmap_transforms_golden.py

The cases are in ``tests/_support/vmap_transforms.py``; test_vmap_transforms.py
checks dualad against the file.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "vmap_transforms_golden.json"


def main() -> None:
    sys.path[:0] = [str(HERE.parent.parent)]  # for _support
    import jax
    import jax.numpy as jnp
    from _support.vmap_transforms import CASES, DTYPES, jax_kit
    jax.config.update("jax_enable_x64", True)
    kit = jax_kit()
    data = {"jax": jax.__version__}
    for dtype in DTYPES:
        cast = lambda a, dtype=dtype: jnp.asarray(a, dtype=dtype)
        for name, case in CASES.items():
            leaves = jax.tree_util.tree_leaves(case(kit, cast))
            data[f"{name} [{dtype}]"] = [{"shape": list(leaf.shape), "dtype": str(leaf.dtype),
                                          "value": leaf.tolist()} for leaf in leaves]
    GOLDEN.write_text(json.dumps(data, indent=None) + "\n")
    print(f"wrote {len(data) - 1} results from jax {jax.__version__} to {GOLDEN}")


if __name__ == "__main__":
    main()
