"""Record JAX's own numbers for reverse mode in jax_golden.json, beside this file.

Regenerate (from the repository root, in a virtual environment, never in the
system Python, with the JAX version the JSON file names)::

    python3 -m venv --system-site-packages /tmp/jaxenv
    /tmp/jaxenv/bin/pip install jax==0.10.2 jaxlib==0.10.2
    /tmp/jaxenv/bin/python tests/reverse/make_jax_golden.py

The functions and points are in ``tests/_support/jax_cases.py``;
test_rev_jax_golden.py checks dualad against the file, so CI without JAX
still compares with JAX's numbers.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "jax_golden.json"


def tolist(tree):
    import jax
    return jax.tree_util.tree_map(lambda a: a.tolist(), tree)


def main() -> None:
    sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent)]  # for _support, and benchmarks
    import jax
    import jax.numpy as jnp
    from _support import jax_cases as c
    jax.config.update("jax_enable_x64", True)
    p = jnp.array(c.TRAJECTORY_POINT)
    w, b = jnp.array(c.TWO_ARGS_POINT[0]), jnp.float64(c.TWO_ARGS_POINT[1])
    @jax.custom_jvp
    def softplus(x):
        return c.softplus(jnp, x)

    softplus.defjvp(lambda primals, tangents: (softplus(*primals), c.softplus_jvp(jnp, primals, tangents)))

    @jax.custom_jvp
    def polar(r, theta):
        return c.polar(jnp, r, theta)

    polar.defjvp(lambda primals, tangents: (polar(*primals), c.polar_jvp(jnp, primals, tangents)))
    x = jnp.array(c.SOFTPLUS_POINT)
    r, theta = (jnp.array(v) for v in c.POLAR_POINT)
    data = {
        "jax": jax.__version__,
        "trajectory_jacrev": tolist(jax.jacrev(lambda q: c.trajectory(jnp, q))(p)),
        "two_args_jacrev": tolist(jax.jacrev(lambda w, b: c.two_args(jnp, w, b), argnums=(0, 1))(w, b)),
        "softplus_custom_jvp_grad": tolist(jax.grad(lambda x: jnp.sum(softplus(x)))(x)),
        "polar_custom_jvp_grad": tolist(jax.grad(lambda r, t: c.polar_loss(jnp, polar, r, t),
                                                 argnums=(0, 1))(r, theta)),
        "polar_custom_jvp_jacrev": tolist(jax.jacrev(polar, argnums=(0, 1))(r, theta)),
    }
    GOLDEN.write_text(json.dumps(data, indent=None) + "\n")
    print(f"wrote {len(data) - 1} results from jax {jax.__version__} to {GOLDEN}")


if __name__ == "__main__":
    main()
