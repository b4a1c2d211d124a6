"""ADBench's hand tracking: the residuals of a skinned hand model, its data, and the
Jacobian in dualad.

ADBench (arXiv 1807.10129, "Hand tracking") fits a hand model to ``n`` points seen by a
depth camera. The model has 22 bones in a tree (the wrist, then four bones for each of
five fingers and the forearm, each bone's parent before it), each with a base
transform relative to its parent and the inverse of its absolute base transform, and
544 vertices, each a weighted sum of its bones (linear blend skinning) of its base
position. The 26 parameters ``theta`` are a global rotation (angle-axis), a global
translation and 20 joint angles (Euler angles of the fingers' bones, laid out by
``to_pose_params``). The residual of each point is ``point - vertex``:

- **simple**: the vertex of each point is one of the model's vertices
  (``correspondences`` index them); the Jacobian is ``3 n x 26``, dense;
- **complicated**: each point corresponds to a triangle of the model, and two
  more parameters per point, ``us``, place it on its triangle (``u0 a + u1 b + (1 -
  u0 - u1) c`` of its corners); the Jacobian is ``3 n x (2 n + 26)``: its ``theta``
  columns dense, its ``us`` columns block-diagonal (3 x 2 per point). ADBench's modules
  return it compacted, ``3 n x 28`` (each row's two ``us`` values, then its 26).

Written as ADBench's Python references (``PyTorch/hand_objective.py``,
``TensorflowCommon/hand_objective.py``) write it: Python loops over the bones for the
posed relative transforms (an Euler rotation each) and for the hierarchy (each
absolute transform its parent's times its relative one); the skinning of all
vertices at once by bone (TensorFlow's form; PyTorch's stacks the same products bone
by bone), the correspondences gathered by index (TensorFlow's ``gather``; PyTorch
loops over points). Matrices are built with ``stack`` and ``concatenate`` where
PyTorch writes their entries into ``eye(3)``: the same numbers, and what every library
can differentiate and trace. Two changes: the references' branch for a global
rotation below 1e-4 (the identity) is left out, as it cannot be traced by ``jax.jit``
and no generated rotation is that small; and the C++ reference's mirroring (``x ->
-x`` for a left hand) is not applied, as in the Python references (whose model is
never mirrored). Every function takes the namespace ``xp`` its array functions come
from (NumPy by default, whose functions dispatch to dualad on its values).

The Jacobian in dualad, of the simple residual: ``jacfwd`` with respect to ``theta`` (26
directions in one pass). Of the complicated one, two ways: ``jacfwd`` with respect to
``theta`` for the dense columns and ``vmap(jacfwd)`` of one point's residual with
respect to its ``us`` for the blocks (``compact_jacobian``, ADBench's structure), or
``sparse_jacfwd`` of the residual of all ``2 n + 26`` parameters in one vector (the
pattern detected and coloured once, 28 colours, then one forward pass of 28
directions).

Data: ADBench's model files (a scanned hand) are not shipped. ``data`` builds a
synthetic model of the same sizes and structure from a fixed seed: the same bone
tree, rigid base transforms (and the exact inverses of their products), 544 vertices
around their bones weighted over 1 to 4 bones in ADBench's proportions, 1,084
triangles; then ``n`` correspondences, points near their vertices, ``theta`` standard
normal and ``us`` uniform on [0, 0.5) as in ADBench's files.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import scipy.sparse

import dualad

from ..common import SEED
from . import readonly

N_THETA = 26
N_FINGERS = 5
# The bone tree of ADBench's hand: the wrist, four bones per finger (thumb, index, middle,
# ring, pinky) each the child of the one before, the first of each the wrist's child,
# and the forearm, also the wrist's.
PARENTS = (-1, *[p for f in range(N_FINGERS) for p in (0, 4 * f + 1, 4 * f + 2, 4 * f + 3)], 0)
N_BONES, N_VERTICES, N_TRIANGLES = len(PARENTS), 544, 1_084
# ADBench's vertices take 1, 2, 3 or 4 bones: 215, 289, 21 and 19 of its 544
BONES_PER_VERTEX = np.array([215, 289, 21, 19]) / 544

# correspondences: ADBench's hand1 (its smallest), and a mid-size one of its 12 (hand7)
SIZES = {"hand1-c100": 100, "hand7-c3200": 3_200}


class HandModel(NamedTuple):
    parents: tuple  # (bones,) Python ints: each bone's parent, -1 for the root
    base_relatives: np.ndarray  # (bones, 4, 4)
    inverse_base_absolutes: np.ndarray  # (bones, 4, 4)
    base_positions: np.ndarray  # (vertices, 4), homogeneous
    weights: np.ndarray  # (vertices, bones)
    triangles: np.ndarray  # (triangles, 3) int


class HandInput(NamedTuple):
    us: np.ndarray | None  # (n, 2): where each point sits on its triangle; None when simple
    theta: np.ndarray  # (26,)
    model: HandModel
    points: np.ndarray  # (n, 3)
    correspondences: np.ndarray  # (n,) int: a vertex (simple) or a triangle (complicated)


# -- the objective ------------------------------------------------------------------------
def to_pose_params(theta, n_bones, xp=np):
    """``(n_bones + 3, 3)``: the global rotation, the scale (ones), the global translation,
    then one row of Euler angles per bone: zeros for the wrist and the thumb's first
    bone, then for each finger ``[a, b, 0], [c, 0, 0], [d, 0, 0]`` and a row of zeros
    (the next finger's first bone; the forearm's after the last)."""
    zeros = xp.zeros(3)
    rows = [theta[0:3], zeros + 1.0, theta[3:6], zeros, zeros]
    i_theta = 6
    for _ in range(N_FINGERS):
        rows.append(xp.concatenate([theta[i_theta:i_theta + 2], zeros[:1]]))
        rows.append(xp.concatenate([theta[i_theta + 2:i_theta + 3], zeros[:2]]))
        rows.append(xp.concatenate([theta[i_theta + 3:i_theta + 4], zeros[:2]]))
        rows.append(zeros)
        i_theta += 4
    assert len(rows) == n_bones + 3
    return xp.stack(rows)


def matrix(rows, xp=np):
    """A matrix from rows of 0-d values."""
    return xp.stack([xp.stack(row) for row in rows])


def euler_angles_to_rotation_matrix(xzy, xp=np):
    tx, ty, tz = xzy[0], xzy[2], xzy[1]
    zero, one = xp.zeros(()), xp.zeros(()) + 1.0
    ctx, stx, cty, sty, ctz, stz = xp.cos(tx), xp.sin(tx), xp.cos(ty), xp.sin(ty), xp.cos(tz), xp.sin(tz)
    rx = matrix([[one, zero, zero], [zero, ctx, -stx], [zero, stx, ctx]], xp)
    ry = matrix([[cty, zero, -sty], [zero, one, zero], [sty, zero, cty]], xp)
    rz = matrix([[ctz, -stz, zero], [stz, ctz, zero], [zero, zero, one]], xp)
    return (rz @ ry) @ rx


def get_posed_relatives(pose_params, base_relatives, xp=np):
    """Each bone's base relative transform times its Euler rotation (a 4 x 4 ``[R 0; 0 1]``)."""
    last_row = xp.concatenate([xp.zeros((1, 3)), xp.zeros((1, 1)) + 1.0], axis=1)

    def inner(rot_param, base_relative):
        r = euler_angles_to_rotation_matrix(rot_param, xp)
        tr = xp.concatenate([xp.concatenate([r, xp.zeros((3, 1))], axis=1), last_row])
        return base_relative @ tr
    return xp.stack([inner(pose_params[3 + i], base_relatives[i]) for i in range(base_relatives.shape[0])])


def relatives_to_absolutes(relatives, parents, xp=np):
    absolutes = []
    for i, parent in enumerate(parents):
        absolutes.append(relatives[i] if parent == -1 else absolutes[parent] @ relatives[i])
    return xp.stack(absolutes)


def angle_axis_to_rotation_matrix(angle_axis, xp=np):
    """Rodrigues' rotation of ``angle_axis`` (its norm the angle; nonzero, see the module)."""
    n = xp.sqrt(xp.sum(angle_axis ** 2))
    x, y, z = angle_axis[0] / n, angle_axis[1] / n, angle_axis[2] / n
    s, c = xp.sin(n), xp.cos(n)
    return matrix([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                   [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                   [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]], xp)


def apply_global_transform(pose_params, positions, xp=np):
    r = angle_axis_to_rotation_matrix(pose_params[0], xp) * pose_params[1]
    return (r @ positions.T).T + pose_params[2]


def get_skinned_vertex_positions(pose_params, model: HandModel, xp=np):
    """``(vertices, 3)``: every vertex posed by its bones' weighted transforms, then moved
    by the global rotation, scale and translation."""
    relatives = get_posed_relatives(pose_params, model.base_relatives, xp)
    absolutes = relatives_to_absolutes(relatives, model.parents, xp)
    transforms = absolutes @ model.inverse_base_absolutes
    positions = transforms @ model.base_positions.T  # (bones, 4, vertices)
    positions = xp.sum(positions * model.weights.T[:, None, :], axis=0)[:3].T
    return apply_global_transform(pose_params, positions, xp)


def hand_objective(theta, model: HandModel, points, correspondences, xp=np):
    """The simple residuals ``(n, 3)``: each point minus its vertex."""
    vertex_positions = get_skinned_vertex_positions(to_pose_params(theta, len(model.parents), xp), model, xp)
    return points - vertex_positions[correspondences]


def get_hand_pt(u, corners):
    """``u0 a + u1 b + (1 - u0 - u1) c`` of a triangle's corners: ``u`` (2,) and ``corners``
    (3, 3) for one point, or (n, 2) and (n, 3, 3) for stacked ones."""
    u0, u1 = u[..., 0:1], u[..., 1:2]
    return u0 * corners[..., 0, :] + u1 * corners[..., 1, :] + (1.0 - u0 - u1) * corners[..., 2, :]


def point_residual(u, point, corners):
    """One point's complicated residual ``(3,)`` (or stacked ones), given its triangle's corners."""
    return point - get_hand_pt(u, corners)


def _objective_and_corners(us, theta, model: HandModel, points, correspondences, xp=np):
    vertex_positions = get_skinned_vertex_positions(to_pose_params(theta, len(model.parents), xp), model, xp)
    corners = vertex_positions[model.triangles[correspondences]]  # (n, 3 corners, 3)
    return point_residual(us, points, corners), corners


def hand_objective_complicated(us, theta, model: HandModel, points, correspondences, xp=np):
    """The complicated residuals ``(n, 3)``: each point minus its place on its triangle."""
    return _objective_and_corners(us, theta, model, points, correspondences, xp)[0]


def for_kind(inp: HandInput, simple, complicated) -> tuple:
    """``(simple, inp's fields after us)`` where ``inp`` is simple (``us`` None), else
    ``(complicated, all of inp's fields)``: a function of that kind and its arguments."""
    return (simple, tuple(inp[1:])) if inp.us is None else (complicated, tuple(inp))


def objective(inp: HandInput):
    """The objective at ``inp`` on plain NumPy arrays (the baseline)."""
    fn, args = for_kind(inp, hand_objective, hand_objective_complicated)
    return fn(*args)


def compiled_objective(inp: HandInput):
    """``f() ->`` the objective at ``inp`` under ``dualad.jit`` (traced at its first call)."""
    fn, args = for_kind(inp, hand_objective, hand_objective_complicated)
    fn = dualad.jit(fn)
    return lambda: fn(*args)


# -- the data ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def hand_model(vertices: int = N_VERTICES, triangles: int = N_TRIANGLES) -> HandModel:
    """A synthetic hand of ADBench's bones and, by default, its numbers of vertices and
    triangles, from a fixed seed, read-only."""
    rng = np.random.default_rng([SEED, 36, 4, vertices, triangles])
    relatives = np.zeros((N_BONES, 4, 4))
    for i in range(N_BONES):
        relatives[i, :3, :3] = angle_axis_to_rotation_matrix(0.4 * rng.standard_normal(3))
        relatives[i, :3, 3] = 0.03 * rng.standard_normal(3)
        relatives[i, 3, 3] = 1.0
    absolutes = relatives_to_absolutes(relatives, PARENTS)
    bone = rng.integers(0, N_BONES, vertices)
    positions = np.ones((vertices, 4))
    positions[:, :3] = absolutes[bone, :3, 3] + 0.01 * rng.standard_normal((vertices, 3))
    weights = np.zeros((vertices, N_BONES))
    for v, count in enumerate(rng.choice(np.arange(1, 5), vertices, p=BONES_PER_VERTEX)):
        others = rng.choice(np.delete(np.arange(N_BONES), bone[v]), count - 1, replace=False)
        weights[v, [bone[v], *others]] = rng.dirichlet(np.ones(count))
    corners = np.stack([rng.choice(vertices, 3, replace=False) for _ in range(triangles)])
    return HandModel(PARENTS, *map(readonly, (relatives, np.linalg.inv(absolutes), positions, weights,
                                              corners)))


@functools.lru_cache(maxsize=None)
def data(n: int, complicated: bool, vertices: int = N_VERTICES, triangles: int = N_TRIANGLES) -> HandInput:
    """A hand input of ``n`` correspondences (to vertices, or to triangles if
    ``complicated``; ``us`` None if not) on ``hand_model(vertices, triangles)``, from a
    fixed seed, read-only."""
    m = hand_model(vertices, triangles)
    rng = np.random.default_rng([SEED, 36, 4, n, complicated, vertices, triangles])
    theta = rng.standard_normal(N_THETA)
    us = readonly(rng.uniform(0.0, 0.5, (n, 2))) if complicated else None
    if complicated:
        correspondences = rng.integers(0, triangles, n)
        near = m.base_positions[m.triangles[correspondences], :3].mean(axis=1)
    else:
        correspondences = rng.integers(0, vertices, n)
        near = m.base_positions[correspondences, :3]
    points = near + 0.01 * rng.standard_normal((n, 3))
    return HandInput(us, readonly(theta), m, *map(readonly, (points, correspondences)))


# -- the Jacobians ---------------------------------------------------------------------------
def jacobians(jacfwd, vmap, xp=np):
    """``(simple, compact)`` by a library's ``jacfwd`` and ``vmap`` (and its namespace ``xp``):
    ``simple(theta, model, points, correspondences)``, ``d residuals / d theta`` ``(n, 3,
    26)`` in one forward pass of 26 directions; ``compact(us, theta, model, points,
    correspondences)``, ADBench's compact complicated Jacobian, ``(d residuals / d us``
    per point ``(n, 3, 2)``, ``d residuals / d theta`` ``(n, 3, 26))``: ``jacfwd`` for
    ``theta`` (its pass also returns the triangles' corners) and ``vmap(jacfwd)`` over
    points for ``us``."""
    simple = jacfwd(functools.partial(hand_objective, xp=xp))
    theta_columns = jacfwd(functools.partial(_objective_and_corners, xp=xp), argnums=1, has_aux=True)
    us_blocks = vmap(jacfwd(point_residual))

    def compact(us, theta, model: HandModel, points, correspondences):
        d_theta, corners = theta_columns(us, theta, model, points, correspondences)
        return us_blocks(us, points, corners), d_theta
    return simple, compact


simple_jacobian, compact_jacobian = jacobians(dualad.jacfwd, dualad.vmap)


def jacobian(inp: HandInput, compiled: bool = False):
    """``J() ->`` ``simple_jacobian``'s result, or ``compact_jacobian``'s for a complicated
    ``inp`` (under ``dualad.jit`` with ``compiled``)."""
    fn, args = for_kind(inp, simple_jacobian, compact_jacobian)
    fn = dualad.jit(fn) if compiled else fn
    return lambda: fn(*args)


def residual(inp: HandInput):
    """``flat -> all 3 n residuals``, of the ``2 n + 26`` parameters in one vector (``us``
    row by row, then ``theta``: ADBench's order), for ``sparse_jacfwd``."""
    n = len(inp.points)

    def f(flat):
        return hand_objective_complicated(flat[:2 * n].reshape(n, 2), flat[2 * n:], *inp[2:]).reshape(-1)
    return f


def flat_parameters(inp: HandInput) -> np.ndarray:
    return np.concatenate([inp.us.ravel(), inp.theta])


def sparse_jacobian(inp: HandInput):
    """``sparse_jacfwd`` of the complicated residual: ``J() -> csr_matrix (3 n, 2 n + 26)``.
    Its first call detects and colours; ``sparse_jacfwd`` compiles its pass from the second."""
    jac, flat = dualad.sparse_jacfwd(residual(inp)), flat_parameters(inp)
    return lambda: jac(flat)


def to_csr(blocks) -> scipy.sparse.csr_matrix:
    """``compact_jacobian``'s ``(d_us, d_theta)`` as the CSR matrix of the whole ``(3 n, 2 n +
    26)`` Jacobian (each row: its point's two ``us`` columns, then the 26 of ``theta``)."""
    d_us, d_theta = (np.asarray(b) for b in blocks)
    n = len(d_us)
    us_cols = np.broadcast_to((2 * np.arange(n))[:, None, None] + np.arange(2), (n, 3, 2))
    theta_cols = np.broadcast_to(2 * n + np.arange(N_THETA), (n, 3, N_THETA))
    values = np.concatenate([d_us, d_theta], axis=2).reshape(3 * n, -1)
    cols = np.concatenate([us_cols, theta_cols], axis=2).reshape(3 * n, -1)
    indptr = np.arange(0, values.size + 1, values.shape[1])
    return scipy.sparse.csr_matrix((values.ravel(), cols.ravel(), indptr), shape=(3 * n, 2 * n + N_THETA))
