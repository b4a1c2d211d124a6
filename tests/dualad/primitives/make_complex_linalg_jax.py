"""Record JAX's derivatives of complex ``svd``, ``eigh`` and the nuclear and 2-norms in
complex_linalg_jax.json, beside this file, for test_complex_linalg.py.

Regenerate (from the repository root, with the JAX version the JSON file names)::

    python -m pip install jax jaxlib
    python tests/dualad/primitives/make_complex_linalg_jax.py

Each case is a real function of a complex matrix that depends on no singular
vector's or eigenvector's phase (so its derivative is defined); the file holds the
matrix, the weights, a direction, and JAX's value, gradient (JAX's convention:
``df/dx - i df/dy``) and directional derivative. Everything is drawn here and
stored, so the test needs neither JAX nor this generator's random numbers.
"""

import functools
import json
import pathlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE / "complex_linalg_jax.json"

CASES = [("svd", (3, 3)), ("svd", (4, 2)), ("svd", (2, 4)), ("svd", (2, 3, 3)),
         ("eigh", (3, 3)), ("eigh", (2, 4, 4)), ("nuc", (3, 4)), ("norm2", (4, 3))]


def functions(xp, linalg):
    """The cases' functions, written once for ``jax.numpy`` and for ``dualad.ops``."""
    def svd(a, w):
        u, s, vh = linalg.svd(a, full_matrices=False)
        rec = (u * xp.sin(s)[..., None, :]) @ vh
        return (xp.sum(s * w[0]) + xp.sum(xp.real(u * xp.conj(u)) * w[1])
                + xp.sum(xp.real(vh * xp.conj(vh)) * w[2]) + xp.sum(xp.real(rec) * w[3])
                + xp.sum(xp.imag(rec) * w[4]))

    def eigh(a, w):
        h = (a + xp.conj(xp.swapaxes(a, -1, -2))) * 0.5  # JAX symmetrizes; Hermitian already
        e, v = linalg.eigh(h)
        rec = (v * xp.sin(e)[..., None, :]) @ xp.conj(xp.swapaxes(v, -1, -2))
        return (xp.sum(e * w[0]) + xp.sum(xp.real(v * xp.conj(v)) * w[1])
                + xp.sum(xp.real(rec) * w[2]) + xp.sum(xp.imag(rec) * w[3]))

    return {"svd": svd, "eigh": eigh,
            "nuc": lambda a, w: linalg.norm(a, "nuc") * w[0],
            "norm2": lambda a, w: linalg.norm(a, 2) * w[0]}


def weights_shapes(name, shape):
    k = min(shape[-2:])
    u, vh = shape[:-1] + (k,), shape[:-2] + (k, shape[-1])
    return {"svd": [shape[:-2] + (k,), u, vh, shape, shape],
            "eigh": [shape[:-1], shape, shape, shape], "nuc": [()], "norm2": [()]}[name]


def main() -> None:
    import jax
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    fns = functions(jnp, jnp.linalg)
    r = np.random.default_rng(26)
    out = []
    for name, shape in CASES:
        def cplx(s):
            return r.standard_normal(s) + 1j * r.standard_normal(s)
        a, t = cplx(shape), cplx(shape)
        w = [r.standard_normal(s) for s in weights_shapes(name, shape)]
        f = functools.partial(fns[name], w=[jnp.asarray(x) for x in w])
        value, tangent = jax.jvp(f, (jnp.asarray(a),), (jnp.asarray(t),))
        grad = np.asarray(jax.grad(f)(jnp.asarray(a)))
        out.append({"name": name, "a": [a.real.tolist(), a.imag.tolist()],
                    "t": [t.real.tolist(), t.imag.tolist()], "w": [x.tolist() for x in w],
                    "value": float(value), "jvp": float(tangent),
                    "grad": [grad.real.tolist(), grad.imag.tolist()]})
    data = {"jax": jax.__version__, "cases": out}
    text = json.dumps(data, separators=(",", ":")).replace('{"name"', '\n{"name"')  # a line a case
    GOLDEN.write_text(text + "\n")
    print(f"wrote {len(out)} cases from jax {jax.__version__} to {GOLDEN}")


if __name__ == "__main__":
    main()
