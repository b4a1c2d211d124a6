"""ADBench's bundle adjustment: the reprojection residuals, their data, and the sparse
Jacobian in dualad.

ADBench (arXiv 1807.10129, "Bundle Adjustment") has ``n`` cameras of 11 parameters
(a Rodrigues rotation, a centre, a focal length, a principal point, two radial
distortion coefficients), ``m`` points in 3-d, and ``p`` observations, each of a
point by a camera with a weight ``w`` and a measured feature (2-d). The residuals
are ``w (project(cam, X) - feat)`` (2 per observation) and ``1 - w^2`` (one per
observation); the Jacobian is of all ``3 p`` residuals with respect to all
``11 n + 3 m + p`` parameters, a sparse matrix of 31 nonzeros per observation.

``project``, ``rodrigues_rotate_point``, ``radial_distort``, ``compute_reproj_err``
and ``compute_w_err`` are written as ADBench's Python reference writes them, for one
observation (``cam`` of 11, ``X`` of 3, ``w`` a 0-d array, ``feat`` of 2), with one
change: they index the last axis (``cam[..., 0:3]``, sums over ``axis=-1``), so that
the same function also computes every observation at once from stacked arrays (the
objective, and the residual ``sparse_jacfwd`` differentiates). The reference's
branch for a zero rotation (``if sqtheta != 0``, the first-order formula ``X + rot x
X``) is left out: it cannot take a different path per observation in one vectorised
call, and no generated rotation is zero.

Two ways to the Jacobian in dualad: ``sparse_jacfwd`` of the residual of all
parameters (the pattern detected and coloured once, then one forward pass of one
direction per colour), and ``vmap(jacfwd(compute_reproj_err))`` over observations
(ADBench's reference: one 2 x 15 Jacobian per observation), the blocks then put into
the same CSR matrix.

Data: ADBench's ba files replicate one camera, one point, one weight and one feature
(``ba1`` holds them on its lines 2-5), observation ``i`` seeing point ``i % m``
through camera ``i % n``. Here each camera, point, weight and feature is drawn
around those values from a fixed seed (so that a wrong index cannot go unseen), with
the same cyclic observations.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import scipy.sparse

import dualad

from ..common import SEED
from . import readonly

N_CAM_PARAMS = 11
ROT, CENTRE, FOCAL, X0, RAD = slice(0, 3), slice(3, 6), slice(6, 7), slice(7, 9), slice(9, 11)

# (n cameras, m points, p observations): a smaller problem, and ADBench's ba1.
SIZES = {"n16-m2000-p8000": (16, 2_000, 8_000), "ba1-n49-m7776-p31843": (49, 7_776, 31_843)}

# the camera, point, weight and feature ADBench's ba1 replicates
BASE_CAMERA = (-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514,
               5.864426, -8.518870, 0.087812, 0.002739)
BASE_POINT = (7.203245, 0.001144, 3.023326)
BASE_WEIGHT = 0.417022
BASE_FEATURE = (271.760969, 834.209256)


class BAInput(NamedTuple):
    cams: np.ndarray  # (n, 11)
    x: np.ndarray  # (m, 3)
    w: np.ndarray  # (p,)
    obs: np.ndarray  # (p, 2) int: camera, point
    feats: np.ndarray  # (p, 2)


@functools.lru_cache(maxsize=None)
def data(n: int, m: int, p: int) -> BAInput:
    """A BA input of ``n`` cameras, ``m`` points, ``p`` observations, from a fixed seed."""
    rng = np.random.default_rng([SEED, 36, 2, n, m, p])
    cams = np.asarray(BASE_CAMERA) * (1.0 + 0.1 * rng.standard_normal((n, N_CAM_PARAMS)))
    x = np.asarray(BASE_POINT) + rng.standard_normal((m, 3))
    w = BASE_WEIGHT * (1.0 + 0.1 * rng.standard_normal(p))
    feats = np.asarray(BASE_FEATURE) + 10.0 * rng.standard_normal((p, 2))
    obs = np.stack([np.arange(p) % n, np.arange(p) % m], axis=1)
    return BAInput(*map(readonly, (cams, x, w, obs, feats)))


def rodrigues_rotate_point(rot, x, xp=np):
    sqtheta = xp.sum(rot ** 2, axis=-1, keepdims=True)
    theta = xp.sqrt(sqtheta)
    costheta = xp.cos(theta)
    sintheta = xp.sin(theta)
    theta_inverse = 1.0 / theta
    w = theta_inverse * rot
    w_cross_x = xp.cross(w, x)
    tmp = xp.sum(w * x, axis=-1, keepdims=True) * (1.0 - costheta)
    return x * costheta + w_cross_x * sintheta + w * tmp


def radial_distort(rad_params, proj, xp=np):
    rsq = xp.sum(proj ** 2, axis=-1, keepdims=True)
    scale = 1.0 + rad_params[..., 0:1] * rsq + rad_params[..., 1:2] * rsq * rsq
    return proj * scale


def project(cam, x, xp=np):
    xcam = rodrigues_rotate_point(cam[..., ROT], x - cam[..., CENTRE], xp)
    distorted = radial_distort(cam[..., RAD], xcam[..., 0:2] / xcam[..., 2:3], xp)
    return distorted * cam[..., FOCAL] + cam[..., X0]


def compute_reproj_err(cam, x, w, feat, xp=np):
    """``w (project(cam, x) - feat)``: (2,) for one observation, (p, 2) for stacked ones."""
    return w[..., None] * (project(cam, x, xp) - feat)


def compute_w_err(w):
    return 1.0 - w ** 2


def ba_objective(cams, x, w, obs, feats, xp=np):
    """Every residual: ``(reprojection errors (p, 2), weight errors (p,))``."""
    return compute_reproj_err(cams[obs[:, 0]], x[obs[:, 1]], w, feats, xp), compute_w_err(w)


def objective(inp: BAInput):
    """The objective at ``inp`` on plain NumPy arrays (the baseline)."""
    return ba_objective(*inp)


# -- the Jacobian --------------------------------------------------------------------------
def residual(inp: BAInput):
    """``flat -> all 3 p residuals``, of the ``11 n + 3 m + p`` parameters in one vector
    (cameras, then points, then weights, ADBench's column order), for ``sparse_jacfwd``.
    Rows: the 2 reprojection errors of each observation, then the ``p`` weight errors."""
    n, m = len(inp.cams), len(inp.x)
    obs, feats = inp.obs, inp.feats

    def f(flat):
        cams = flat[:N_CAM_PARAMS * n].reshape(n, N_CAM_PARAMS)
        x = flat[N_CAM_PARAMS * n:N_CAM_PARAMS * n + 3 * m].reshape(m, 3)
        w = flat[N_CAM_PARAMS * n + 3 * m:]
        reproj, w_err = ba_objective(cams, x, w, obs, feats)
        return np.concatenate([reproj.reshape(-1), w_err])
    return f


def flat_parameters(inp: BAInput) -> np.ndarray:
    return np.concatenate([inp.cams.ravel(), inp.x.ravel(), inp.w])


def sparse_jacobian(inp: BAInput):
    """``sparse_jacfwd`` of the residual: ``J() -> csr_matrix (3 p, 11 n + 3 m + p)``.
    Its first call detects and colours; ``sparse_jacfwd`` compiles its pass from the second."""
    jac, flat = dualad.sparse_jacfwd(residual(inp)), flat_parameters(inp)
    return lambda: jac(flat)


_reproj_blocks = dualad.vmap(dualad.jacfwd(compute_reproj_err, argnums=(0, 1, 2)))
_w_err_diagonal = dualad.vmap(dualad.jacfwd(compute_w_err))


def jacobian_blocks(cams, x, w, obs, feats):
    """ADBench's per-observation Jacobians by ``vmap(jacfwd)``: ``d reproj / d cam`` (p, 2, 11),
    ``/ d X`` (p, 2, 3), ``/ d w`` (p, 2), and ``d w_err / d w`` (p,)."""
    d_cam, d_x, d_w = _reproj_blocks(cams[obs[:, 0]], x[obs[:, 1]], w, feats)
    return d_cam, d_x, d_w, _w_err_diagonal(w)


@functools.lru_cache(maxsize=None)
def block_structure(n: int, m: int, p: int):
    """The CSR ``(indices, indptr)`` of the Jacobian, and for each of its nonzeros in
    order, its position in ``concatenate([d_cam, d_x, d_w, dw_err])`` flattened:
    what puts ``jacobian_blocks`` into the matrix ``sparse_jacobian`` returns."""
    inp = data(n, m, p)
    cam, point = inp.obs[:, 0], inp.obs[:, 1]
    j = np.arange(p)
    # columns of observation j's two rows: 11 of its camera, 3 of its point, its weight
    cols = np.concatenate([N_CAM_PARAMS * cam[:, None] + np.arange(N_CAM_PARAMS),
                           N_CAM_PARAMS * n + 3 * point[:, None] + np.arange(3),
                           (N_CAM_PARAMS * n + 3 * m + j)[:, None]], axis=1)  # (p, 15)
    # where each (row r of observation j, column c) value sits in the flat blocks
    cam_at = (j[:, None, None] * 2 + np.arange(2)[:, None]) * N_CAM_PARAMS + np.arange(N_CAM_PARAMS)
    x_at = 2 * p * N_CAM_PARAMS + (j[:, None, None] * 2 + np.arange(2)[:, None]) * 3 + np.arange(3)
    w_at = 2 * p * (N_CAM_PARAMS + 3) + j[:, None, None] * 2 + np.arange(2)[:, None]
    at = np.concatenate([cam_at, x_at, w_at], axis=2)  # (p, 2, 15)
    indices = np.concatenate([np.repeat(cols, 2, axis=0).ravel(), N_CAM_PARAMS * n + 3 * m + j])
    positions = np.concatenate([at.ravel(), 2 * p * (N_CAM_PARAMS + 4) + j])
    indptr = np.concatenate([np.arange(0, 2 * p * 15 + 1, 15), 2 * p * 15 + np.arange(1, p + 1)])
    return indices, indptr, positions


def to_csr(blocks, n: int, m: int, p: int) -> scipy.sparse.csr_matrix:
    """``jacobian_blocks``' four arrays as the CSR matrix of the whole Jacobian."""
    indices, indptr, positions = block_structure(n, m, p)
    flat = np.concatenate([np.asarray(b).ravel() for b in blocks])
    shape = (3 * p, N_CAM_PARAMS * n + 3 * m + p)
    return scipy.sparse.csr_matrix((flat[positions], indices, indptr), shape=shape)


def vmap_jacobian(inp: BAInput, compiled: bool = False):
    """``J() -> csr_matrix``, from ``vmap(jacfwd)`` blocks (under ``dualad.jit`` with
    ``compiled``; the CSR assembly is NumPy indexing either way)."""
    blocks = dualad.jit(jacobian_blocks) if compiled else jacobian_blocks
    n, m, p = len(inp.cams), len(inp.x), len(inp.w)
    return lambda: to_csr(blocks(*inp), n, m, p)
