"""Each derivative transform under ``vmap``, written once for dualad and for JAX.

A case is a function of a *kit*: the transforms (``vmap``, ``derivative``,
``jvp``, ``grad``, ...) and the array namespace ``xp`` of one library, so the
same lines build ``dualad.vmap(dualad.derivative(f))`` and
``jax.vmap(jax.jacfwd(f))``. make_vmap_transforms_golden.py (beside the test)
records JAX's results in a JSON file; test_vmap_transforms.py compares dualad's
shape, dtype and numbers with them, so CI without JAX still checks against JAX.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

DTYPES = ("float64", "float32")

# A batch of 4 points of 3 entries, one direction for all, per-element directions,
# a second-order term for jet, and 4 scalars.
X = np.linspace(0.1, 1.2, 12).reshape(4, 3)
X_WITH_ZERO = X.copy()
X_WITH_ZERO[2, 1] = 0.0  # jet's power recurrence divides by x: this element takes its fallback
U = np.cos(np.arange(12.0)).reshape(4, 3)
V = np.array([0.3, -0.2, 0.5])
W = np.array([1.0, 2.0, -1.0])
T = np.linspace(0.2, 1.1, 4)


def vector(xp, x):
    """R^3 -> R^3: a coupled map (every output depends on every input)."""
    return xp.tanh(x) * xp.sum(x ** 2)


def scalar(xp, x):
    """R^3 -> R: a loss with a non-diagonal Hessian."""
    return xp.sum(xp.sin(x) * x ** 2) + x[0] * x[1] * x[2]


def curve(xp, t):
    """R -> R^2."""
    return xp.stack([xp.sin(t) * t, t ** 3])


def _sparse_blocks(k, xs):
    """The per-element Jacobians of ``vector``, as the diagonal blocks of the sparse
    Jacobian of the function of the whole batch (what sparse_jacfwd's error under
    vmap recommends). JAX's kit gives the dense Jacobian of the same function."""
    b, n = xs.shape
    whole = k.sparse_jacfwd(lambda flat: k.vmap(lambda x: vector(k.xp, x))(flat.reshape(b, n)).reshape(-1))
    dense = k.dense(whole(xs.reshape(-1))).reshape(b, n, b, n)
    return k.xp.stack([dense[i, :, i, :] for i in range(b)])


CASES = {
    "derivative": lambda k, c: k.vmap(k.derivative(lambda t: k.xp.sin(t) * t * t))(c(T)),
    "derivative of a vector output": lambda k, c: k.vmap(k.derivative(lambda t: curve(k.xp, t)))(c(T)),
    "derivative of derivative": lambda k, c: k.vmap(k.derivative(k.derivative(
        lambda t: t ** 3 * k.xp.sin(t))))(c(T)),
    "jvp": lambda k, c: k.vmap(lambda x: k.jvp(lambda y: vector(k.xp, y), (x,), (c(V),)))(c(X)),
    "jvp with batched tangents": lambda k, c: k.vmap(
        lambda x, u: k.jvp(lambda y: vector(k.xp, y), (x,), (u,)))(c(X), c(U)),
    "jacfwd": lambda k, c: k.vmap(k.jacfwd(lambda x: vector(k.xp, x)))(c(X)),
    "jacrev": lambda k, c: k.vmap(k.jacrev(lambda x: vector(k.xp, x)))(c(X)),
    "hessian": lambda k, c: k.vmap(k.hessian(lambda x: scalar(k.xp, x)))(c(X)),
    "grad": lambda k, c: k.vmap(k.grad(lambda x: scalar(k.xp, x)))(c(X)),
    "grad with an unbatched argument": lambda k, c: k.vmap(
        k.grad(lambda x, w: scalar(k.xp, x * w), argnums=(0, 1)), in_axes=(0, None))(c(X), c(W)),
    "value_and_grad": lambda k, c: k.vmap(k.value_and_grad(lambda x: scalar(k.xp, x)))(c(X)),
    "hvp": lambda k, c: k.vmap(lambda x: k.hvp(lambda y: scalar(k.xp, y), x, c(V)))(c(X)),
    "jet": lambda k, c: k.vmap(lambda x: k.jet(lambda y: vector(k.xp, y), (x,), ((c(V), c(W)),)))(c(X)),
    "jet at a zero": lambda k, c: k.vmap(
        lambda x: k.jet(lambda y: vector(k.xp, y), (x,), ((c(V), c(W)),)))(c(X_WITH_ZERO)),
    "linearize": lambda k, c: k.vmap(lambda x: (lambda y, f_jvp: (y, f_jvp(c(V))))(
        *k.linearize(lambda y: vector(k.xp, y), x)))(c(X)),
    "sparse_jacfwd": lambda k, c: _sparse_blocks(k, c(X)),
}


def jax_kit():
    """JAX's transforms under the names the cases use (``derivative``: ``jacfwd`` of
    a scalar; ``hvp``: ``jvp`` of ``grad``; ``sparse_jacfwd``: the dense ``jacfwd``)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental.jet import jet
    return SimpleNamespace(
        xp=jnp, vmap=jax.vmap, derivative=jax.jacfwd, jvp=jax.jvp, jacfwd=jax.jacfwd,
        jacrev=jax.jacrev, hessian=jax.hessian, grad=jax.grad, value_and_grad=jax.value_and_grad,
        hvp=lambda f, x, v: jax.jvp(jax.grad(f), (x,), (v,))[1], jet=jet, linearize=jax.linearize,
        sparse_jacfwd=jax.jacfwd, dense=lambda a: a)


def dualad_kit():
    """dualad's own transforms, each from the package that defines it."""
    import dualad
    import mixed
    import reverse
    return SimpleNamespace(
        xp=np, vmap=dualad.vmap, derivative=dualad.derivative, jvp=dualad.jvp, jacfwd=dualad.jacfwd,
        jacrev=reverse.jacrev, hessian=dualad.hessian, grad=reverse.grad,
        value_and_grad=reverse.value_and_grad, hvp=mixed.hvp, jet=dualad.jet, linearize=dualad.linearize,
        sparse_jacfwd=dualad.sparse_jacfwd, dense=lambda m: m.toarray())
