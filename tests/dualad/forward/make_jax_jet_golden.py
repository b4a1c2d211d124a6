"""Record ``jax.experimental.jet``'s numbers in jax_jet_golden.json, beside this file.

Regenerate (from the repository root, with the JAX version the JSON file
names; the CPU build is enough)::

    python -m pip install jax jaxlib
    python tests/dualad/forward/make_jax_jet_golden.py

Each function of ``tests/_support/jet_functions.py`` is written once against
an array namespace ``xp``: JAX runs it with ``jax.numpy`` (in float64),
test_jet_jax.py with NumPy on dualad's Jets, on the same fixed draw of
inputs, so CI without JAX still compares with JAX's numbers.
"""

import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "jax_jet_golden.json"
def main() -> None:
    sys.path.insert(0, str(HERE.parents[1]))  # for _support
    import jax
    from _support.jet_functions import FUNCTIONS, ORDER, inputs
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.experimental.jet import jet
    cases = []
    for name, f in FUNCTIONS.items():
        primals, series = inputs(name)
        y0, ys = jet(lambda *a, f=f: f(jnp, *a), tuple(jnp.asarray(p) for p in primals),
                     tuple([jnp.asarray(t) for t in s] for s in series))
        cases.append({"name": name, "primal": np.asarray(y0).tolist(),
                      "series": [np.asarray(t).tolist() for t in ys]})
    GOLDEN.write_text(json.dumps({"jax": jax.__version__, "order": ORDER, "cases": cases}) + "\n")
    print(f"wrote {len(cases)} cases from jax {jax.__version__} to {GOLDEN}")


if __name__ == "__main__":
    main()
