"""L2-regularized logistic regression, solved three ways with exact Hessian-vector products.

The objective, for features ``X`` (with an intercept column), labels
``y`` in {-1, +1} and ``lam > 0``::

    loss(w) = mean(log(1 + exp(-y * (X @ w)))) + lam / 2 * |w|^2

is written once with :mod:`dualad.ops`; ``mixed.scipy`` supplies its gradient
(``jac``) and exact H v products (``hessp``: forward-over-reverse, no finite
differences) in SciPy's form. Solvers compared, all to a gradient 2-norm of about ``1e-8``:

- ``mixed.newton_cg`` (matrix-free truncated Newton, our HVPs);
- ``mixed.trust_region`` (Steihaug-CG trust region, our HVPs);
- SciPy ``trust-krylov`` with our ``jac`` and ``hessp``;
- SciPy ``L-BFGS-B`` with our ``jac`` (first order; the usual baseline).

SciPy's trust-krylov usually stops short of ``gtol = 1e-8`` here (it runs to
its iteration limit, capped at 100 below, or reports "A bad approximation
caused failure to predict improvement"): once the decrease per step is
below the rounding of f (f* is about 0.1, not 0), its ratio of actual to
predicted decrease is noise. ``mixed``'s solvers switch to a slope-based
estimate of the decrease there. The script shows that the derivatives are
not the cause: it runs trust-krylov again with the gradient and H v written
out by hand (:func:`closed_form`), compares dualad's H v with the closed
form's at every point and direction trust-krylov asked for, and prints how
both runs ended, at ``gtol = 1e-8`` (both stop short, or one does: which
one turns on the last bits of f) and at ``gtol = 1e-6`` (both converge).
L-BFGS-B is given ``ftol = 0`` and a gradient test that implies the same
2-norm; it stops when f no longer decreases at all.

Data
----
``iris`` (default): Fisher's iris measurements (UCI; 150 flowers, 4
features), which SciPy ships as a test file
(``scipy/io/arff/tests/data/iris.arff``), so nothing is downloaded. The task
is versicolor against virginica, the two classes that are not linearly
separable, on standardized features and all their pairwise products
(degree-2 features: 15 weights with the intercept). If a SciPy installation
lacks its test data, the example says so and uses the synthetic set.

``synthetic``: NOT real data. Drawn reproducibly (fixed seed) from a known
logistic model: correlated Gaussian features whose scales span two orders of
magnitude (so the problem is ill-conditioned, as real features often are),
true weights ``w* ~ N(0, 1/d)``, and labels ``y = +1`` with probability
``sigmoid(X @ w*)``. Sizes are set with ``--samples`` and ``--features``.

Run from the repository root::

    python examples/logistic_regression.py
    python examples/logistic_regression.py --data synthetic --samples 100000 --features 200

Examples
--------
>>> rows = main(["--data", "synthetic", "--samples", "300", "--features", "5", "--quiet"])
>>> sorted(r["method"] for r in rows)[:2]
['L-BFGS-B', 'mixed.newton_cg']
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
from logistic_loss import make_loss
from scipy.optimize import OptimizeResult, minimize
from scipy.special import expit

from mixed import newton_cg, trust_region
from mixed.scipy import hessp, jac

TOL = 1e-8


# -- data ------------------------------------------------------------------------
def iris_path() -> Path:
    import scipy.io.arff
    return Path(scipy.io.arff.__file__).parent / "tests" / "data" / "iris.arff"


def load_iris() -> tuple[np.ndarray, np.ndarray, str]:
    """Versicolor (+1) against virginica (-1) on degree-2 features of the standardized data."""
    from scipy.io import arff
    records, _ = arff.loadarff(iris_path())
    names = ("sepallength", "sepalwidth", "petallength", "petalwidth")
    features = np.column_stack([records[name] for name in names])
    labels = np.array([c.decode() for c in records["class"]])
    keep = labels != "Iris-setosa"
    features, labels = features[keep], labels[keep]
    z = (features - features.mean(0)) / features.std(0)
    pairs = [z[:, i] * z[:, j] for i in range(4) for j in range(i, 4)]
    x = np.column_stack([np.ones(len(z)), z, *pairs])
    y = np.where(labels == "Iris-versicolor", 1.0, -1.0)
    return x, y, f"iris (versicolor vs virginica): {x.shape[0]} samples, {x.shape[1]} weights"


def make_synthetic(n_samples: int, n_features: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """Draws from a known logistic model (see the module docstring): not real data."""
    rng = np.random.default_rng(seed)
    d = n_features
    mixing = np.eye(d) + 0.3 * rng.standard_normal((d, d)) / math.sqrt(d)
    scales = np.logspace(-1, 1, d)
    x = (rng.standard_normal((n_samples, d)) @ mixing) * scales
    x = np.column_stack([np.ones(n_samples), x])
    w_true = rng.standard_normal(d + 1) / math.sqrt(d)
    p = 1.0 / (1.0 + np.exp(-(x @ w_true)))
    y = np.where(rng.uniform(size=n_samples) < p, 1.0, -1.0)
    return x, y, f"synthetic logistic model (seed {seed}): {n_samples} samples, {d + 1} weights"


def closed_form(x: np.ndarray, y: np.ndarray, lam: float) -> tuple[Callable, Callable]:
    """The loss's gradient and Hessian-vector product written out by hand, to check dualad's
    against. With ``n`` samples, margins ``m = y * (x @ w)`` and ``y * y = 1``::

        grad(w)    = -x.T @ (y * sigmoid(-m)) / n + lam * w
        hessp(w, v) = x.T @ (sigmoid(m) * sigmoid(-m) * (x @ v)) / n + lam * v

    (``sigmoid(-m)``, not ``1 - sigmoid(m)``, which loses its digits for large margins).
    """
    n = len(y)

    def grad(w):
        return -(x.T @ (y * expit(-y * (x @ w)))) / n + lam * w

    def hessp(w, v):
        m = y * (x @ w)
        return x.T @ (expit(m) * expit(-m) * (x @ v)) / n + lam * v

    return grad, hessp


# -- the solvers -----------------------------------------------------------------
def trust_krylov(loss: Callable, w0: np.ndarray, grad: Callable, hess_p: Callable,
                 tol: float = TOL) -> OptimizeResult:
    """SciPy's trust-krylov from ``w0`` with the given derivatives, at most 100 steps."""
    # Where it stalls (see above) its trial steps can hold NaN; NumPy's
    # RuntimeWarnings about that would only clutter the table.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return minimize(loss, w0, jac=grad, hessp=hess_p, method="trust-krylov",
                        options={"gtol": tol, "maxiter": 100})


def solve_all(loss: Callable, w0: np.ndarray, tol: float = TOL) -> list[dict]:
    """Run every solver from ``w0``; one row of results per solver."""
    grad, hess_p = jac(loss), hessp(loss)
    rows = []

    def record(method, run):
        start = time.perf_counter()
        w, nit, nfev, nhev, success, message = run()
        seconds = time.perf_counter() - start
        rows.append({"method": method, "nit": nit, "nfev": nfev, "nhev": nhev, "seconds": seconds,
                     "loss": float(loss(w)), "grad_norm": float(np.linalg.norm(grad(w))),
                     "success": bool(success), "message": message, "w": w})

    def ours(solver):
        def run():
            r = solver(loss, w0, tol=tol, maxiter=1000)
            return r.x, r.nit, r.nfev, r.nhev, r.success, r.message
        return run

    def scipy_trust_krylov():
        r = trust_krylov(loss, w0, grad, hess_p, tol)
        return r.x, r.nit, r.nfev, r.nhev, r.success, r.message

    def scipy_lbfgsb():
        # L-BFGS-B tests the largest |gradient entry|; tol / sqrt(n) makes
        # that imply a 2-norm of at most tol, as the other solvers use.
        r = minimize(loss, w0, jac=grad, method="L-BFGS-B",
                     options={"gtol": tol / math.sqrt(w0.size), "ftol": 0.0, "maxiter": 100_000,
                              "maxfun": 100_000})
        return r.x, r.nit, r.nfev, 0, r.success, r.message

    record("mixed.newton_cg", ours(newton_cg))
    record("mixed.trust_region", ours(trust_region))
    record("scipy trust-krylov + hessp", scipy_trust_krylov)
    record("L-BFGS-B", scipy_lbfgsb)
    return rows


def against_closed_form(loss: Callable, closed: tuple, w0: np.ndarray, tol: float = TOL) -> dict:
    """SciPy's trust-krylov from ``w0`` with dualad's ``jac`` and ``hessp``, and again with
    ``closed`` (:func:`closed_form`'s pair), on the same ``loss``; and the largest relative
    difference between dualad's H v and the closed form's over every ``(w, v)`` the first
    run asked for (its start, its iterates and their directions) but those SciPy passed
    holding NaN (its subproblem solver gives them once it stalls)."""
    grad, hess_p = jac(loss), hessp(loss)
    asked = []

    def recorded(w, v):
        asked.append((np.array(w), np.array(v)))
        return hess_p(w, v)

    runs = {"dualad": (grad, trust_krylov(loss, w0, grad, recorded, tol)),
            "closed form": (closed[0], trust_krylov(loss, w0, *closed, tol))}
    finite = [(w, v) for w, v in asked if np.all(np.isfinite(w)) and np.all(np.isfinite(v)) and np.any(v)]
    worst = max(float(np.linalg.norm(hess_p(w, v) - closed[1](w, v)) / np.linalg.norm(closed[1](w, v)))
                for w, v in finite)
    out = {name: {"success": bool(r.success), "message": r.message, "nit": r.nit,
                  "grad_norm": float(np.linalg.norm(g(r.x)))} for name, (g, r) in runs.items()}
    return {**out, "hessp_rel_diff": worst, "products": len(finite), "not_finite": len(asked) - len(finite),
            "tol": tol}


def describe(check: dict) -> str:
    """What :func:`against_closed_form` found, in words."""
    ours, theirs = check["dualad"], check["closed form"]
    ended = (f"SciPy's trust-krylov to |grad| <= {check['tol']:g}: with dualad's jac and hessp "
             f"success {ours['success']} ({ours['message']}), |grad| {ours['grad_norm']:.1e}; with "
             f"the closed-form ones success {theirs['success']} ({theirs['message']}), "
             f"|grad| {theirs['grad_norm']:.1e}.")
    agree = (f"dualad's H v is the closed form's to {check['hessp_rel_diff']:.1e} (largest relative "
             f"difference over the {check['products']} products trust-krylov asked for"
             + (f"; {check['not_finite']} more had NaN directions" if check["not_finite"] else "") + ")")
    if check["hessp_rel_diff"] > 1e-10:
        return f"{ended}\n{agree}: they differ, a bug in dualad's derivatives."
    if ours["success"] and theirs["success"]:
        return f"{ended}\n{agree}; both converged."
    if ours["success"] == theirs["success"]:
        return (f"{ended}\n{agree}: the derivatives agree, and trust-krylov stops short with the closed "
                "form's too: its test of the decrease meets the rounding of f.")
    return (f"{ended}\n{agree}: the derivatives agree, yet the runs end differently: at this tolerance "
            "trust-krylov's end turns on the last bits of f and its derivatives.")


def print_table(title: str, rows: list[dict]) -> None:
    print(title)
    print(f"{'method':28s} {'iters':>6s} {'f+g evals':>9s} {'H v':>6s} {'time [s]':>9s} "
          f"{'final loss':>19s} {'|grad|':>9s}  success: message")
    for r in rows:
        print(f"{r['method']:28s} {r['nit']:6d} {r['nfev']:9d} {r['nhev']:6d} {r['seconds']:9.3f} "
              f"{r['loss']:19.15f} {r['grad_norm']:9.2e}  {r['success']}: {r['message'][:60]}")
    ref = rows[0]["w"]
    spread = max(float(np.max(np.abs(r["w"] - ref))) for r in rows if r["success"])
    print(f"largest difference between the converged solutions: {spread:.1e}\n")


def main(argv: list[str] | None = None) -> list[dict]:
    """Parse the command line, build the data set, run and print every solver."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", choices=["iris", "synthetic"], default="iris")
    parser.add_argument("--samples", type=int, default=20_000, help="synthetic data only")
    parser.add_argument("--features", type=int, default=50, help="synthetic data only")
    parser.add_argument("--lam", type=float, default=1e-3, help="L2 regularization weight")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="return the results without printing")
    args = parser.parse_args(argv)

    data = args.data
    if data == "iris" and not iris_path().exists():
        print(f"{iris_path()} is not installed (a SciPy without its test data); "
              "using the synthetic data set instead.")
        data = "synthetic"
    if data == "iris":
        x, y, description = load_iris()
    else:
        x, y, description = make_synthetic(args.samples, args.features, args.seed)

    loss = make_loss(x, y, args.lam)
    rows = solve_all(loss, np.zeros(x.shape[1]))
    if not args.quiet:
        print_table(f"{description}, lam = {args.lam:g}, from w = 0, to |grad| <= {TOL:g}", rows)
        lbfgs = next(r for r in rows if r["method"] == "L-BFGS-B")
        newton = rows[0]
        print(f"Newton-CG took {newton['nit']} steps with {newton['nhev']} H v products; L-BFGS-B "
              f"{lbfgs['nit']} steps of one gradient each.\n")
        for tol in (TOL, 1e-6):
            print(describe(against_closed_form(loss, closed_form(x, y, args.lam), np.zeros(x.shape[1]), tol)))
    return rows


if __name__ == "__main__":
    main()
