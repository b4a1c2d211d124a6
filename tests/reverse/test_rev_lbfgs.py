"""``reverse.optim.LBFGS`` and its strong-Wolfe line search.

Without a line search, L-BFGS is checked against a dense NumPy reference: the
inverse Hessian built by the BFGS update formula, pair by pair, from
``(y . s) / (y . y) I`` (a different computation from the two-loop recursion
that gives the same direction). The line search is checked against the
conditions it promises; PyTorch's own iterates are in test_rev_optim_torch.py.
"""

import numpy as np
import pytest
from _support.optim_problem import ROSENBROCK_X0, X0, grad_np, loss, rosenbrock, rosenbrock_grad_np

from reverse import Tensor
from reverse.optim import LBFGS
from reverse.optim._line_search import strong_wolfe


def lbfgs_reference(grad, x0, lr, history_size, iterations):
    """The points where PyTorch's fixed-step L-BFGS evaluates the loss, from x0."""
    n = x0.size
    x, g, pairs, gamma, points = x0.copy(), grad(x0), [], 1.0, [x0.copy()]
    x_prev = g_prev = None
    for k in range(iterations):
        if k == 0:
            d = -g
        else:
            s, y = x - x_prev, g - g_prev
            if y @ s > 1e-10:
                pairs = (pairs + [(s, y)])[-history_size:]
                gamma = (y @ s) / (y @ y)
            H = gamma * np.eye(n)
            for s, y in pairs:
                rho = 1.0 / (y @ s)
                V = np.eye(n) - rho * np.outer(y, s)
                H = V.T @ H @ V + rho * np.outer(s, s)
            d = -H @ g
        t = min(1.0, 1.0 / np.abs(g).sum()) * lr if k == 0 else lr
        x_prev, g_prev = x, g
        x = x + t * d
        g = grad(x)
        points.append(x)
    return np.array(points[:-1]), x


def run(f, x0, steps, dtype="float64", **kw):
    """Our parameter after ``steps`` calls of step(), and every point the closure saw."""
    x = Tensor(x0.astype(dtype), requires_grad=True)
    opt = LBFGS([x], **kw)
    points = []

    def closure():
        opt.zero_grad()
        points.append(x.value.copy())
        out = f(x)
        out.backward()
        return out
    for _ in range(steps):
        opt.step(closure)
    return x.value, np.array(points), opt


EXACT = dict(tolerance_grad=0.0, tolerance_change=0.0)


@pytest.mark.parametrize("f, grad, x0, lr, history_size", [
    (loss, grad_np, X0, 0.5, 100),
    (loss, grad_np, X0, 0.9, 1),
    (rosenbrock, rosenbrock_grad_np, ROSENBROCK_X0, 1e-3, 3),
], ids=["convex", "history-1", "rosenbrock-history-3"])
def test_fixed_step_matches_dense_bfgs_updates(f, grad, x0, lr, history_size):
    # Two calls of 6 iterations each: the history carries over from one step() to the next.
    got, points, _ = run(f, x0, 2, lr=lr, history_size=history_size, max_iter=6, **EXACT)
    want_points, want = lbfgs_reference(grad, x0, lr, history_size, 12)
    np.testing.assert_allclose(points, want_points, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_the_history_is_used():
    """A history of 1 and of 100 take different paths (so the cases above can fail)."""
    one = run(loss, X0, 1, lr=0.9, history_size=1, max_iter=8, **EXACT)[0]
    many = run(loss, X0, 1, lr=0.9, history_size=100, max_iter=8, **EXACT)[0]
    assert np.abs(one - many).max() > 1e-6


@pytest.mark.parametrize("dtype, atol", [("float64", 1e-6), ("float32", 1e-3)])
def test_strong_wolfe_solves_rosenbrock(dtype, atol):
    x, _, opt = run(rosenbrock, ROSENBROCK_X0, 5, dtype, line_search_fn="strong_wolfe",
                    tolerance_change=1e-12)
    assert x.dtype == dtype and opt.state[opt.param_groups[0]["params"][0]]["d"].dtype == dtype
    np.testing.assert_allclose(x, np.ones(4), atol=atol)


def test_stops_at_once_at_a_minimum():
    x, points, opt = run(loss, np.array([0.0, 0.0]), 1, lr=1.0)  # not a minimum: it moves
    assert len(points) > 1
    x, points, opt = run(rosenbrock, np.ones(4), 1, line_search_fn="strong_wolfe")
    assert len(points) == 1 and opt.state[opt.param_groups[0]["params"][0]]["func_evals"] == 1
    np.testing.assert_array_equal(x, np.ones(4))


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_max_eval_bounds_the_evaluations_of_one_step(line_search_fn):
    _, points, opt = run(rosenbrock, ROSENBROCK_X0, 1, max_iter=100, max_eval=7,
                         line_search_fn=line_search_fn)
    assert opt.state[opt.param_groups[0]["params"][0]]["func_evals"] == len(points) <= 8


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_fresh_optimizer_loaded_from_a_state_dict_continues_identically(dtype):
    kw = dict(line_search_fn="strong_wolfe", max_iter=4, history_size=3)
    x, _, opt = run(rosenbrock, ROSENBROCK_X0, 2, dtype, **kw)
    saved = opt.state_dict()
    assert set(saved["state"][0]) >= {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "n_iter"}
    y = Tensor(x.copy(), requires_grad=True)
    fresh = LBFGS([y], **kw)
    fresh.load_state_dict(saved)

    def step(opt, p):
        def closure():
            opt.zero_grad()
            out = rosenbrock(p)
            out.backward()
            return out
        opt.step(closure)
    x_param = opt.param_groups[0]["params"][0]
    step(opt, x_param)
    step(fresh, y)
    np.testing.assert_array_equal(x_param.value, y.value)


@pytest.mark.parametrize("f, df, t, c2", [
    (lambda t: (t - 3.0) ** 2, lambda t: 2 * (t - 3.0), 1.0, 0.1),            # too short: extrapolates
    (lambda t: (t - 0.2) ** 2, lambda t: 2 * (t - 0.2), 1.0, 0.1),            # too long: zooms
    (lambda t: -np.sin(3 * t) + 0.1 * t * t, lambda t: -3 * np.cos(3 * t) + 0.2 * t, 2.0, 0.5),
    (lambda t: (t - 2.0) ** 4 - t, lambda t: 4 * (t - 2.0) ** 3 - 1, 10.0, 0.3),  # far too long
], ids=["extrapolate", "zoom", "wavy", "quartic"])
def test_strong_wolfe_returns_a_point_meeting_both_conditions(f, df, t, c2):
    """Along d = [1] from 0, where each f decreases: the conditions of the search's definition."""
    d, c1 = np.array([1.0]), 1e-4
    evaluate = lambda t: (float(f(t)), np.array([df(t)]))
    f0, g0 = float(f(0.0)), float(df(0.0))
    f_new, g_new, step, n = strong_wolfe(evaluate, d, t, f0, np.array([g0]), g0, c1=c1, c2=c2)
    assert n >= 2  # the first trial fails in each case: the search itself ran
    assert f_new == f(step) and g_new[0] == df(step)
    assert f_new <= f0 + c1 * step * g0                  # sufficient decrease
    assert abs(g_new[0]) <= c2 * abs(g0)                 # curvature (strong)


@pytest.mark.parametrize("make, error, match", [
    (lambda p: LBFGS(p, line_search_fn="armijo"), ValueError,
     r"line_search_fn must be None or 'strong_wolfe', got 'armijo'"),
    (lambda p: LBFGS(p, history_size=0), ValueError, r"history_size must be an int >= 1, got 0"),
    (lambda p: LBFGS(p, max_iter=2.5), TypeError, r"max_iter must be an int >= 1, got float 2.5"),
    (lambda p: LBFGS(p, lr=-1.0), ValueError, r"lr must be >= 0.0, got -1.0"),
    (lambda p: LBFGS([{"params": p[:1]}, {"params": p[1:]}]), ValueError,
     r"LBFGS takes one parameter group, as PyTorch's does, got 2"),
    (lambda p: LBFGS(p).add_param_group({"params": [Tensor(np.ones(1), requires_grad=True)]}),
     ValueError, r"LBFGS takes one parameter group"),
    (lambda p: LBFGS(p + [Tensor(2.0, requires_grad=True)]), TypeError,
     r"params\[2\] holds float 2.0; LBFGS puts parameter values back in place"),
    (lambda p: LBFGS(p).step(), TypeError, r"missing 1 required positional argument: 'closure'"),
    (lambda p: LBFGS(p).step(None), TypeError, r"LBFGS.step needs closure: .*got None"),
], ids=range(9))
def test_bad_arguments_name_what_is_wrong(make, error, match):
    with pytest.raises(error, match=match):
        make([Tensor(np.ones(2), requires_grad=True), Tensor(np.ones(3), requires_grad=True)])
