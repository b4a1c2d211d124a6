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
its iteration limit, capped at 100 below): once the decrease per step is
below the rounding of f (f* is about 0.1, not 0), its ratio of actual to
predicted decrease is noise. It does the same with hand-written
derivatives, and converges at ``gtol = 1e-6``. ``mixed``'s solvers switch to
a slope-based estimate of the decrease there. L-BFGS-B is given
``ftol = 0`` and a gradient test that implies the same 2-norm; it stops when
f no longer decreases at all.

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
from scipy.optimize import minimize

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


# -- the solvers -----------------------------------------------------------------
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
        # Where it stalls (see above) its trial steps can hold NaN; NumPy's
        # RuntimeWarnings about that would only clutter the table.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = minimize(loss, w0, jac=grad, hessp=hess_p, method="trust-krylov",
                         options={"gtol": tol, "maxiter": 100})
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
              f"{lbfgs['nit']} steps of one gradient each.")
    return rows


if __name__ == "__main__":
    main()
