"""ADBench's Gaussian mixture model: the objective, its data, and its gradient in dualad.

The objective is ADBench's (arXiv 1807.10129, "Gaussian Mixture Model fitting"): the
log-likelihood of ``n`` points in ``d`` dimensions under a mixture of ``k`` Gaussians,
each with a log-weight ``alpha``, a mean and an inverse covariance factor ``icf`` (``d``
logs of a diagonal, then the strictly lower triangle column by column), plus the log
of a Wishart prior on the inverse covariances. The gradient is
with respect to ``alphas``, ``means`` and ``icf``.

Written as ADBench's Python reference writes it: the lower-triangular factors built
column by column in Python loops over components and columns, the log-sum-exp over
components vectorised over the points (``logsumexpvec``), the Wishart prior's
``log Gamma_p`` a constant. The reference centres the points with a Python
loop over them (``stack(x[i] - means for i in range(n))``); broadcasting computes
the same array, and is written here. Every function takes the namespace ``xp`` its
array functions come from (NumPy by default, whose functions dispatch to dualad on
its values; ``jax.numpy`` or a torch shim in ``benchmarks/compare.py``).

Data, as ADBench's ``gmm-data-gen.py`` draws it: ``alphas`` and ``icf`` and the points
standard normal, ``means`` uniform on [0, 1), Wishart ``gamma = 1``, ``m = 0``, here
from a fixed seed and built on first use (no data files).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

import dualad
import reverse

from ..common import SEED
from . import readonly

# (d, k, n): ADBench's smallest GMM (the 1k set, d = 2, k = 5), and a mid-size one of its
# 10k set. The first is the smallest (tests/test_benchmarks_smoke.py runs it).
SIZES = {"d2-k5-n1000": (2, 5, 1_000), "d10-k25-n10000": (10, 25, 10_000)}


class GMMInput(NamedTuple):
    alphas: np.ndarray  # (k,)
    means: np.ndarray  # (k, d)
    icf: np.ndarray  # (k, d (d + 1) / 2)
    x: np.ndarray  # (n, d)
    wishart_gamma: float
    wishart_m: int


@functools.lru_cache(maxsize=None)
def data(d: int, k: int, n: int) -> GMMInput:
    """ADBench's GMM input for ``d, k, n``, from a fixed seed, read-only."""
    rng = np.random.default_rng([SEED, 36, 1, d, k, n])
    alphas = rng.standard_normal(k)
    means = rng.uniform(0.0, 1.0, (k, d))
    icf = rng.standard_normal((k, d * (d + 1) // 2))
    x = rng.standard_normal((n, d))
    return GMMInput(*map(readonly, (alphas, means, icf, x)), 1.0, 0)


def logsumexp(x, xp=np):
    """``log(sum(exp(x)))`` of a vector, shifted by its maximum."""
    mx = xp.max(x)
    return xp.log(xp.sum(xp.exp(x - mx))) + mx


def logsumexpvec(x, xp=np):
    """``logsumexp`` of each row of a matrix."""
    mx = xp.max(x, axis=1)
    return xp.log(xp.sum(xp.exp(x - mx[:, None]), axis=1)) + mx


def log_gamma_distrib(a: float, p: int) -> float:
    """The log of the multivariate Gamma function, ``log Gamma_p(a)`` (SciPy's
    ``multigammaln``, which the reference calls; in ``math`` here so that every
    library, ``torch.compile`` included, takes it as the Python float it is)."""
    return p * (p - 1) / 4.0 * math.log(math.pi) + sum(math.lgamma(a - 0.5 * j) for j in range(p))


def log_wishart_prior(p, wishart_gamma, wishart_m, sum_qs, qdiags, icf, xp=np):
    n = p + wishart_m + 1
    k = icf.shape[0]
    out = xp.sum(0.5 * wishart_gamma * wishart_gamma
                 * (xp.sum(qdiags ** 2, axis=1) + xp.sum(icf[:, p:] ** 2, axis=1))
                 - wishart_m * sum_qs)
    c = n * p * math.log(wishart_gamma / math.sqrt(2.0))
    return out - k * (c - log_gamma_distrib(0.5 * n, p))


def construct_l(d, icf_row, xp=np):
    """The (d, d) strictly lower-triangular factor of one component, column by column."""
    columns, at = [], d
    for i in range(d):
        count = d - i - 1
        columns.append(xp.concatenate([xp.zeros(i + 1), icf_row[at:at + count]]))
        at += count
    return xp.stack(columns, axis=-1)


def gmm_objective(alphas, means, icf, x, wishart_gamma, wishart_m, xp=np):
    """ADBench's GMM objective (a float): ``alphas`` (k,), ``means`` (k, d), ``icf``
    (k, d (d + 1) / 2), the points ``x`` (n, d), Wishart ``gamma`` and ``m``."""
    n, d = x.shape
    qdiags = xp.exp(icf[:, :d])
    sum_qs = xp.sum(icf[:, :d], axis=1)
    ls = xp.stack([construct_l(d, icf[i], xp) for i in range(icf.shape[0])])
    xcentered = x[:, None, :] - means[None, :, :]  # (n, k, d)
    lxcentered = qdiags * xcentered + xp.einsum("ijk,mik->mij", ls, xcentered)
    sqsum_lxcentered = xp.sum(lxcentered ** 2, axis=2)
    inner_term = alphas + sum_qs - 0.5 * sqsum_lxcentered
    slse = xp.sum(logsumexpvec(inner_term, xp))
    constant = -n * d * 0.5 * math.log(2.0 * math.pi)
    return (constant + slse - n * logsumexp(alphas, xp)
            + log_wishart_prior(d, wishart_gamma, wishart_m, sum_qs, qdiags, icf, xp))


# -- dualad ------------------------------------------------------------------------------
def objective(inp: GMMInput):
    """The objective at ``inp`` on plain NumPy arrays (the baseline)."""
    return gmm_objective(*inp)


gradient = reverse.grad(gmm_objective, argnums=(0, 1, 2))
"""``(d alphas, d means, d icf)`` by one reverse pass: ``gradient(*inp)``."""


def compiled_objective():
    """``gmm_objective`` under ``dualad.jit`` (``gamma`` and ``m`` are static)."""
    return dualad.jit(gmm_objective)


def compiled_gradient():
    """``gradient`` under ``dualad.jit``: the reverse pass traced once and replayed."""
    return dualad.jit(gradient)
