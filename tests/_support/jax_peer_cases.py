"""The cases dualad's tests compare with JAX, shared by the tests and by
``tests/make_jax_peer_golden.py``, which records JAX's answers (and the inputs
it was given) in ``tests/jax_peer_golden.json``: the tests read both from the
file, so CI without JAX still compares with JAX's numbers.

Only what both sides need lives here: the lists of cases, the inputs' draws,
and functions whose one spelling runs on NumPy values, dualad values and
``jax.numpy`` arrays alike.
"""

from __future__ import annotations

import functools
import json
import pathlib

import numpy as np


@functools.cache
def recorded() -> dict:
    """JAX's answers and their inputs, as make_jax_peer_golden.py wrote them."""
    return json.loads((pathlib.Path(__file__).resolve().parent.parent / "jax_peer_golden.json").read_text())


FFT_TRANSFORMS = [
    ("fft", {}), ("ifft", {}), ("fft", {"n": 5}), ("fft", {"n": 11, "norm": "ortho"}),
    ("rfft", {}), ("rfft", {"n": 7, "axis": 0}), ("irfft", {}), ("irfft", {"n": 9, "norm": "forward"}),
    ("fft2", {}), ("ifft2", {"s": (2, 6)}), ("fftn", {"axes": (0,)}), ("rfftn", {}),
    ("irfftn", {}), ("rfft2", {"norm": "ortho"}), ("irfft2", {"s": (3, 6)}),
    ("hfft", {}), ("hfft", {"n": 7, "norm": "ortho"}), ("ihfft", {}), ("ihfft", {"n": 5, "axis": 0}),
]


def fft_id(name: str, kw: dict) -> str:
    return f"{name}-{kw}"


def fft_input(name: str) -> np.ndarray:
    """Real input, or the half spectrum the inverse real transforms take."""
    x = np.random.default_rng(0).normal(size=(3, 8))
    return np.fft.rfft(x) if name.startswith(("irfft", "hfft")) else x


SPECIAL_IN_UNIT = {"erfinv", "ndtri", "logit"}
# scipy.special functions whose second derivatives are compared with jax.scipy.special's
SPECIAL_JAX = ["erf", "erfc", "erfinv", "gammaln", "digamma", "ndtr", "log_ndtr", "ndtri", "i0", "i1",
               "i0e", "i1e", "logit", "expit", "erfcx"]


def special_point(name: str) -> np.ndarray:
    return np.array([0.2, 0.35, 0.8]) if name in SPECIAL_IN_UNIT else np.array([0.4, 1.3, 2.5])


# Real-valued functions of a complex vector (test_complex.py): each written once for a
# namespace ``xp`` (jax.numpy for the recorded gradients; dualad.ops in the tests, or NumPy
# for the names in THROUGH_NUMPY, whose tests go through NumPy's dispatch).
COMPLEX_POINT = np.array([1.0 + 2.0j, -3.0 + 0.5j, 0.25 - 1.5j])
REAL_VALUED = {
    "real": lambda z, xp: xp.sum(xp.real(z) ** 3),
    "imag": lambda z, xp: xp.sum(xp.sin(xp.imag(z))),
    "abs": lambda z, xp: xp.sum(xp.abs(z) ** 3),
    "abs_numpy": lambda z, xp: xp.sum(xp.abs(z) * xp.real(z)),
    "angle": lambda z, xp: xp.sum(xp.angle(z) * xp.imag(z)),
    "conj_product": lambda z, xp: xp.sum(xp.real(xp.conj(z) * z * z)),
    "var": lambda z, xp: xp.var(z),
    "std": lambda z, xp: xp.std(z),
    "norm": lambda z, xp: xp.linalg.norm(z),
    "holomorphic_then_real": lambda z, xp: xp.sum(xp.real(xp.exp(z) * xp.sin(z))),
}
THROUGH_NUMPY = {"abs_numpy", "std", "norm"}


# (input shape, kernel shape, keywords of ops.conv, id): PyTorch's layout
CONV_CONFIGS = [
    ((2, 3, 7, 6), (4, 3, 3, 2), {}, "2d"),
    ((1, 4, 8, 8), (6, 2, 3, 3), {"stride": 2, "padding": 1, "groups": 2}, "2d-stride-groups"),
    ((2, 2, 9), (3, 2, 3), {"dilation": 2, "padding": "same"}, "1d-dilated-same"),
    ((1, 2, 5, 6, 4), (2, 2, 2, 3, 2), {"stride": (1, 2, 1), "padding": ((1, 0), (0, 1), (1, 1))},
     "3d-asymmetric"),
]

# (f, in_axes, out_axes) for vmap: f uses only operators and methods both libraries have
VMAP_SEMANTICS = [
    (lambda x, w: (x * w, w, 2.0 * w.sum()), (0, None), (1, -1, 0)),  # unbatched outputs broadcast
    (lambda x, w: ({"a": x @ w, "b": w}, x.sum()), (-1, None), ({"a": -1, "b": 0}, 0)),
    (lambda x, w: x.T * w, (1, None), -2),
]

LU_SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3), (2, 1, 3, 5)]


def lu_id(shape: tuple, complex_input: bool) -> str:
    return f"{shape}-{'complex' if complex_input else 'real'}"


# Points for maximum and minimum's derivatives (ties included), and for relu and softplus's.
KINK_PAIRS = [(0.0, 0.0), (1.0, 1.0), (2.0, -1.0), (-2.0, 1.0)]
KINK_POINTS = [-1.0, 0.0, 1.0]

# argnums of mixed.grad_and_hvp, by name
MIXED_ARGNUMS = {"w": 0, "b": 1, "(w, b)": (0, 1), "(b, w)": (1, 0), "(-3, 1)": (-3, 1)}


# custom_root and custom_linear_solve (tests/dualad/test_implicit_jax.py): the problems, and
# the solvers spelled once for both libraries, given the namespace (numpy, jax.numpy) and jacfwd
CUBE_ROOT_POINTS = [(0.3, "float64"), (2.0, "float64"), (27.5, "float64"), (2.0, "float32")]
NEWTON_STEPS = 40
SYSTEM_SIZE = 4


def cube_root(custom_root, a, xp, jacfwd):
    """a ** (1/3): the root of x**3 - a by Newton from 1 (of a's dtype), a scalar tangent solve."""
    def newton(f, x):
        for _ in range(NEWTON_STEPS):
            x = x - f(x) / jacfwd(f)(x)
        return x
    return custom_root(lambda x: x ** 3 - a, a * 0 + 1, newton, lambda g, y: y / g(xp.ones_like(y)))


def system_root(custom_root, m, s, p, xp, jacfwd):
    """The root x of m @ x + s * x**3 = p (m near 3 I, not symmetric, s > 0: one root) by
    Newton from 0, with dense tangent solves by the Jacobian's matrix."""
    def newton(f, x):
        for _ in range(NEWTON_STEPS):
            x = x - xp.linalg.solve(jacfwd(f)(x), f(x))
        return x
    return custom_root(lambda x: m @ x + s * x ** 3 - p, p * 0, newton, dense_solve(xp, jacfwd))


def dense_solve(xp, jacfwd):
    """solve(g, y) for a linear g: g's matrix (the Jacobian at y) and a dense solve."""
    return lambda g, y: xp.linalg.solve(jacfwd(g)(y), y)


def linear_solution(custom_linear_solve, a, b, symmetric, xp, jacfwd):
    """a^-1 b by custom_linear_solve with matvec v -> a @ v and dense solves: symmetric=True for
    the positive-definite system, transpose_solve for the general one."""
    solve = dense_solve(xp, jacfwd)
    if symmetric:
        return custom_linear_solve(lambda v: a @ v, b, solve, symmetric=True)
    return custom_linear_solve(lambda v: a @ v, b, solve, transpose_solve=solve)


def implicit_loss(x, w):
    """A scalar of a solution, for gradients and Hessians."""
    return (w * x).sum() + (x * x * x).sum()


# scipy.linalg.solve_triangular's cases (tests/dualad/scipy/test_triangular_solves.py): trans, lower,
# unit_diagonal and b's ndim
TRIANGULAR_CASES = [(trans, lower, unit, b_ndim) for trans in (0, 1) for lower in (False, True)
                    for unit in (False, True) for b_ndim in (1, 2)]


def triangular_id(trans: int, lower: bool, unit: bool, b_ndim: int) -> str:
    return f"trans={trans}-lower={lower}-unit={unit}-b{b_ndim}d"


def triangular_inputs(r, b_ndim: int) -> tuple:
    """``(a, b, w, da, db)``: a well-conditioned 4 x 4 matrix, a right-hand side of ``b_ndim``
    dimensions, the loss's weights, and a direction for each."""
    a = r.standard_normal((4, 4)) + 4.0 * np.eye(4)
    shape = (4,) if b_ndim == 1 else (4, 2)
    return a, r.standard_normal(shape), r.standard_normal(shape), r.standard_normal((4, 4)), \
        r.standard_normal(shape)
