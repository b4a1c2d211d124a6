"""ADBench's GMM, BA, hand tracking and LSTM (``benchmarks/adbench``): the objectives and
dualad's derivatives against ADBench's published test values (GMM, BA) or its PyTorch
reference's numbers on our inputs (hand tracking), JAX's recorded numbers
(``adbench_golden.json``, from ``make_adbench_golden.py``) and central differences, and
each ``dualad.jit`` form against its eager one, at small sizes. (ADBench's hand test
values need its hand model, which is not shipped: ``make_adbench_golden.py --adbench
PATH`` checks them against a checkout.)"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

from dualad.testing import check_grads

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.adbench import ba, gmm, hand, lstm  # noqa: E402

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parent / "adbench_golden.json").read_text())
RTOL = 1e-10  # between libraries, as benchmarks/compare.py checks them


def close(got, want, rtol=RTOL):
    """Same shape, and every number within ``rtol`` of the largest of ``want``."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * max(np.abs(want).max(), 1e-300))


def gmm_input(recorded) -> gmm.GMMInput:
    return gmm.GMMInput(*(np.array(recorded[k]) for k in ("alphas", "means", "icf", "x")),
                        recorded["wishart_gamma"], recorded["wishart_m"])


def ba_input(recorded) -> ba.BAInput:
    return ba.BAInput(*(np.array(recorded[k]) for k in ba.BAInput._fields))


def lstm_input(recorded) -> lstm.LSTMInput:
    return lstm.LSTMInput(*(np.array(recorded[k]) for k in lstm.LSTMInput._fields))


def hand_input(kind: str) -> hand.HandInput:
    """The recorded hand input of ``kind`` (simple, complicated) on the recorded model."""
    m, recorded = GOLDEN["hand"]["model"], GOLDEN["hand"][kind]["inputs"]
    model = hand.HandModel(tuple(m["parents"]), *(np.array(m[k]) for k in hand.HandModel._fields[1:]))
    us = None if recorded["us"] is None else np.array(recorded["us"])
    return hand.HandInput(us, np.array(recorded["theta"]), model, np.array(recorded["points"]),
                          np.array(recorded["correspondences"]))


# -- ADBench's own test inputs and the values its tests expect ---------------------------
def test_gmm_matches_adbench_published_values():
    p = GOLDEN["published"]["gmm"]
    d, k, n = p["d"], p["k"], p["n"]
    inp = gmm.GMMInput(np.array(p["alphas"]), np.array(p["means"]).reshape(k, d),
                       np.array(p["icf"]).reshape(k, -1), np.array(p["x"]).reshape(n, d),
                       p["wishart_gamma"], p["wishart_m"])
    close(gmm.objective(inp), p["objective"], rtol=1e-13)
    close(np.concatenate([g.ravel() for g in gmm.gradient(*inp)]), p["gradient"], rtol=1e-13)


def test_ba_matches_adbench_published_values():
    """ADBench's BA test replicates one camera, point, weight and feature; its Jacobian
    lists 2 x 15 values per observation (two of them zeros sparse_jacfwd does not store)
    and then the weight errors' derivatives."""
    p = GOLDEN["published"]["ba"]
    n, m, obs_count = p["n"], p["m"], p["p"]
    i = np.arange(obs_count)
    inp = ba.BAInput(np.tile(p["camera"], (n, 1)), np.tile(p["point"], (m, 1)),
                     np.full(obs_count, p["weight"]), np.stack([i % n, i % m], axis=1),
                     np.tile(p["feature"], (obs_count, 1)))
    reproj, w_err = ba.objective(inp)
    close(reproj, np.tile(p["reproj_err"], (obs_count, 1)), rtol=1e-15)
    close(w_err, np.full(obs_count, p["w_err"]), rtol=1e-15)
    vmap_jac = ba.vmap_jacobian(inp)()
    close(vmap_jac.data, p["jacobian_values"], rtol=1e-14)
    sparse = ba.sparse_jacobian(inp)()
    assert sparse.shape == vmap_jac.shape == (3 * obs_count, 11 * n + 3 * m + obs_count)
    assert sparse.nnz == 29 * obs_count  # d(row 0)/d(x0[1]) and d(row 1)/d(x0[0]) are zero
    assert abs(sparse - vmap_jac).max() == 0.0


@pytest.mark.parametrize("kind", ["simple", "complicated"])
def test_hand_matches_adbench_pytorch_reference(kind):
    """ADBench's own PyTorch hand objective (its Python reference), run on our recorded
    inputs: the residuals, and the whole Jacobian (its columns: ``us`` then ``theta``)."""
    p = GOLDEN["published"]["hand"][kind]
    inp = hand_input(kind)
    n = len(inp.points)
    close(hand.objective(inp), p["objective"], rtol=1e-13)
    jac = hand.jacobian(inp)()
    got = jac if kind == "simple" else hand.to_csr(jac).toarray().reshape(n, 3, 2 * n + hand.N_THETA)
    close(got, p["jacobian"], rtol=1e-13)


# -- JAX's numbers on our generators' inputs ----------------------------------------------
@pytest.mark.parametrize("name, problem, make_input", [("gmm", gmm, gmm_input), ("lstm", lstm, lstm_input)])
def test_objective_and_gradient_match_jax(name, problem, make_input):
    """GMM and LSTM: the objective and ``reverse.grad``'s gradient."""
    recorded = GOLDEN[name]
    inp = make_input(recorded["inputs"])
    close(problem.objective(inp), recorded["objective"])
    gradient = problem.gradient(*inp)
    assert len(gradient) == len(recorded["gradient"])
    for got, want in zip(gradient, recorded["gradient"]):
        close(got, want)


def test_ba_matches_jax():
    recorded = GOLDEN["ba"]
    inp = ba_input(recorded["inputs"])
    reproj, w_err = ba.objective(inp)
    close(reproj, recorded["reproj_err"])
    close(w_err, recorded["w_err"])
    for got, want in zip(ba.jacobian_blocks(*inp), recorded["jacobian_blocks"]):
        close(got, want)


@pytest.mark.parametrize("kind", ["simple", "complicated"])
def test_hand_matches_jax(kind):
    recorded = GOLDEN["hand"][kind]
    inp = hand_input(kind)
    assert (inp.us is None) == (kind == "simple")
    close(hand.objective(inp), recorded["objective"])
    got = leaves(hand.jacobian(inp)())
    want = [recorded["jacobian"]] if kind == "simple" else recorded["jacobian"]  # (d_us, d_theta)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        close(g, w)


# -- central differences ----------------------------------------------------------------
def test_gmm_derivatives_match_finite_differences():
    inp = gmm_input(GOLDEN["gmm"]["inputs"])
    check_grads(lambda a, mu, q: gmm.gmm_objective(a, mu, q, *inp[3:]), inp[:3], order=1)


def test_ba_derivatives_match_finite_differences():
    inp = ba_input(GOLDEN["ba"]["inputs"])
    check_grads(lambda flat: ba.residual(inp)(flat), (ba.flat_parameters(inp),), order=1)


def test_lstm_derivatives_match_finite_differences():
    inp = lstm_input(GOLDEN["lstm"]["inputs"])
    check_grads(lambda w, w2: lstm.lstm_objective(w, w2, *inp[2:]), inp[:2], order=1)


@pytest.mark.parametrize("kind", ["simple", "complicated"])
def test_hand_derivatives_match_finite_differences(kind):
    inp = hand_input(kind)
    fn, args = hand.for_kind(inp, hand.hand_objective, hand.hand_objective_complicated)
    n_diff = 1 if kind == "simple" else 2  # theta, or us and theta
    check_grads(lambda *x: fn(*x, *args[n_diff:]), args[:n_diff], order=1)


@pytest.mark.parametrize("kind", ["simple", "complicated"])
def test_hand_jacobian_matches_central_differences_column_by_column(kind):
    """Every column of the whole Jacobian (3 n rows; 26, or 2 n + 26 columns), ``jacfwd`` and
    ``vmap(jacfwd)``'s blocks placed by ``to_csr`` where complicated."""
    inp = hand_input(kind)
    n = len(inp.points)
    if kind == "simple":
        x, f = inp.theta, (lambda theta: hand.hand_objective(theta, *inp[2:]).ravel())
        got = hand.jacobian(inp)().reshape(3 * n, hand.N_THETA)
    else:
        x, f = hand.flat_parameters(inp), hand.residual(inp)
        got = hand.to_csr(hand.jacobian(inp)()).toarray()
    step = 1e-6
    want = np.stack([(f(x + step * e) - f(x - step * e)) / (2 * step) for e in np.eye(len(x))], axis=1)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


def test_hand_at_rest_is_the_global_transform_of_the_base_vertices():
    """With every joint angle zero each bone's transform is the identity (the model's
    inverse absolutes are its absolutes' inverses), so each vertex is its base position
    rotated by Rodrigues' formula and translated; the Jacobian's translation columns
    are minus the identity, exactly."""
    inp = hand_input("simple")
    theta = np.zeros(hand.N_THETA)
    theta[:6] = [0.3, -1.2, 0.5, 0.1, 0.2, -0.3]
    angle = np.linalg.norm(theta[:3])
    k = theta[:3] / angle
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    rotation = np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross
    base = inp.model.base_positions[inp.correspondences, :3]
    close(hand.hand_objective(theta, *inp[2:]), inp.points - (base @ rotation.T + theta[3:6]), rtol=1e-14)
    jac = hand.simple_jacobian(theta, *inp[2:])
    assert (jac[:, :, 3:6] == -np.eye(3)).all()


# -- the two ways to the BA Jacobian, and dualad.jit against eager ---------------------------
def test_ba_sparse_jacfwd_equals_vmap_jacfwd():
    inp = ba_input(GOLDEN["ba"]["inputs"])
    sparse = ba.sparse_jacobian(inp)
    first, second = sparse(), sparse()  # eager, then the compiled pass
    by_blocks = ba.vmap_jacobian(inp)()
    scale = abs(by_blocks).max()
    assert abs(first - by_blocks).max() <= 1e-12 * scale
    assert abs(second - first).max() <= 1e-12 * scale
    p = len(inp.w)
    close(by_blocks[2 * p:, -p:].diagonal(), -2.0 * inp.w)  # the weight errors' rows


def test_hand_sparse_jacfwd_equals_its_blocks():
    """``sparse_jacfwd`` of the complicated residual stores, per row, its point's two ``us``
    columns and 24 of ``theta`` (each translation moves one coordinate): 26 values, equal
    to the compact blocks', whose other two are exact zeros; then its compiled pass."""
    inp = hand_input("complicated")
    n = len(inp.points)
    sparse = hand.sparse_jacobian(inp)
    first, second = sparse(), sparse()
    by_blocks = hand.to_csr(hand.jacobian(inp)())
    assert first.shape == by_blocks.shape == (3 * n, 2 * n + hand.N_THETA)
    assert first.nnz == 26 * 3 * n and by_blocks.nnz == 28 * 3 * n
    scale = abs(by_blocks).max()
    assert abs(first - by_blocks).max() <= 1e-13 * scale
    assert abs(second - first).max() <= 1e-13 * scale


def leaves(tree) -> list:
    """The arrays of a result (a number, an array, or tuples of them), flat."""
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in leaves(t)]
    return [np.asarray(tree)]


def _eager_and_jit(problem):
    import dualad
    if problem == "gmm":
        inp = gmm_input(GOLDEN["gmm"]["inputs"])
        return inp, [(gmm.gmm_objective, gmm.compiled_objective()), (gmm.gradient, gmm.compiled_gradient())]
    if problem.startswith("hand"):
        inp = hand_input(problem.split()[1])
        return (), [(lambda: hand.objective(inp), hand.compiled_objective(inp)),
                    (hand.jacobian(inp), hand.jacobian(inp, compiled=True))]
    if problem == "lstm":
        inp = lstm_input(GOLDEN["lstm"]["inputs"])
        return inp, [(lstm.lstm_objective, lstm.compiled_objective()),
                     (lstm.gradient, lstm.compiled_gradient())]
    inp = ba_input(GOLDEN["ba"]["inputs"])
    return inp, [(ba.ba_objective, dualad.jit(ba.ba_objective)),
                 (ba.jacobian_blocks, dualad.jit(ba.jacobian_blocks))]


@pytest.mark.parametrize("problem", ["gmm", "ba", "lstm", "hand simple", "hand complicated"])
def test_jit_equals_eager(problem):
    inp, pairs = _eager_and_jit(problem)
    for eager, compiled in pairs:
        want = leaves(eager(*inp))
        for _ in range(2):  # the trace, then a replay
            got = leaves(compiled(*inp))
            assert len(got) == len(want)
            for a, b in zip(got, want):
                close(a, b, rtol=1e-13)


def test_generators_are_adbench_shaped():
    g = gmm.data(2, 5, 1000)
    assert (g.alphas.shape, g.means.shape, g.icf.shape, g.x.shape) == ((5,), (5, 2), (5, 3), (1000, 2))
    assert (g.wishart_gamma, g.wishart_m) == (1.0, 0) and not g.x.flags.writeable
    b = ba.data(49, 7776, 31843)
    assert b.cams.shape == (49, 11) and b.x.shape == (7776, 3) and b.w.shape == (31843,)
    assert (b.obs[:, 0] == np.arange(31843) % 49).all() and (b.obs[:, 1] == np.arange(31843) % 7776).all()
    s = lstm.data(2, 1024)
    assert s.main_params.shape == (4, 56) and s.extra_params.shape == (3, 14) and s.state.shape == (4, 14)
    assert s.sequence.shape == (1024, 14) and set(np.unique(s.sequence)) == {0.0, 1.0}
    assert s.sequence[:, 0].any()  # some character needs all 14 bits
    h = hand.hand_model()
    assert h.parents == hand.PARENTS and all(p < i for i, p in enumerate(h.parents))
    assert len(h.parents) == 22 and h.base_relatives.shape == h.inverse_base_absolutes.shape == (22, 4, 4)
    assert h.base_positions.shape == (544, 4) and (h.base_positions[:, 3] == 1.0).all()
    assert h.weights.shape == (544, 22) and np.allclose(h.weights.sum(axis=1), 1.0)
    assert set(np.count_nonzero(h.weights, axis=1)) == {1, 2, 3, 4}
    assert h.triangles.shape == (1084, 3) and (np.diff(np.sort(h.triangles), axis=1) > 0).all()
    absolutes = hand.relatives_to_absolutes(h.base_relatives, h.parents)
    assert np.allclose(absolutes @ h.inverse_base_absolutes, np.eye(4), atol=1e-12)
    c = hand.data(100, True)
    assert c.us.shape == (100, 2) and ((0 <= c.us) & (c.us < 0.5)).all() and c.correspondences.max() < 1084
    assert hand.data(100, False).us is None and hand.data(3200, False).points.shape == (3200, 3)
