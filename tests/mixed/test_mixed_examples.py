"""The logistic-regression examples run, at small sizes, and agree with each other."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _support.examples import load_example

import mixed


@pytest.fixture(scope="module")
def cpu_example():
    return load_example("logistic_regression")


@pytest.fixture(scope="module")
def gpu_example():
    return load_example("logistic_regression_gpu")


def test_cpu_example_on_small_synthetic_data(cpu_example, capsys):
    rows = cpu_example.main(["--data", "synthetic", "--samples", "400", "--features", "6"])
    out = capsys.readouterr().out
    assert "synthetic logistic model" in out and "mixed.newton_cg" in out and "L-BFGS-B" in out
    by_method = {r["method"]: r for r in rows}
    assert set(by_method) == {"mixed.newton_cg", "mixed.trust_region", "scipy trust-krylov + hessp",
                              "L-BFGS-B"}
    for method in ("mixed.newton_cg", "mixed.trust_region"):
        assert by_method[method]["success"] and by_method[method]["grad_norm"] <= 1e-8
    assert by_method["L-BFGS-B"]["success"]
    newton = by_method["mixed.newton_cg"]
    assert newton["nit"] < by_method["L-BFGS-B"]["nit"]
    # Each stops where |grad| <= TOL, so two solutions may differ by up to 2 TOL / the
    # Hessian's least eigenvalue (strong convexity), not by a fixed 1e-7.
    x, y, _ = cpu_example.make_synthetic(400, 6)
    least = np.linalg.eigvalsh(mixed.hessian(cpu_example.make_loss(x, y, 1e-3))(newton["w"]))[0]
    apart = 2 * cpu_example.TOL / least
    assert apart < 1e-5, apart  # a well-conditioned problem: the bound still tests something
    np.testing.assert_allclose(by_method["mixed.trust_region"]["w"], newton["w"], rtol=0, atol=apart)
    np.testing.assert_allclose(by_method["L-BFGS-B"]["w"], newton["w"], atol=1e-4)


def test_cpu_example_on_iris(cpu_example, capsys):
    if not cpu_example.iris_path().exists():
        pytest.skip("this SciPy installation ships no test data (iris.arff)")
    rows = cpu_example.main(["--quiet"])
    assert capsys.readouterr().out == ""
    newton = rows[0]
    assert newton["method"] == "mixed.newton_cg" and newton["success"]
    assert newton["loss"] == pytest.approx(0.0812516199455, abs=1e-12)


def test_iris_data_set_is_the_documented_one(cpu_example):
    if not cpu_example.iris_path().exists():
        pytest.skip("this SciPy installation ships no test data (iris.arff)")
    x, y, description = cpu_example.load_iris()
    assert x.shape == (100, 15) and np.all(x[:, 0] == 1.0)
    assert np.sum(y == 1) == 50 and np.sum(y == -1) == 50
    assert "versicolor" in description


def test_gpu_example_solver_runs_on_numpy(gpu_example):
    """The device example's solve path is backend-generic: run it on NumPy, small."""
    x, y = gpu_example.make_data(np, 2000, 8, "float64")
    rows = gpu_example.solve(np, x, y, 1e-3, 1e-8, lambda: None)
    assert [r["method"] for r in rows] == ["newton_cg", "trust_region"]
    assert all(r["success"] and r["grad_norm"] <= 1e-8 for r in rows)
    np.testing.assert_allclose(rows[0]["x"], rows[1]["x"], atol=1e-7)


def test_gpu_example_float32_stays_float32(gpu_example):
    x, y = gpu_example.make_data(np, 1000, 4, "float32")
    rows = gpu_example.solve(np, x, y, 1e-3, 1e-4, lambda: None)
    assert all(r["x"].dtype == np.float32 and r["success"] for r in rows)


def test_gpu_example_without_a_gpu_exits_with_a_message(gpu_example, monkeypatch):
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a GPU is present; see test_gpu_example_on_device")
    except Exception:
        pass
    monkeypatch.setitem(sys.modules, "cupy", None)  # make the import fail even where CuPy exists
    with pytest.raises(SystemExit) as exit_info:
        gpu_example.main(["--samples", "10"])
    message = str(exit_info.value.code)
    assert "needs CuPy and an NVIDIA GPU" in message and "logistic_regression.py" in message


@pytest.mark.gpu
def test_gpu_example_on_device(gpu_example, capsys):
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("needs an NVIDIA GPU")
    except Exception:
        pytest.skip("needs an NVIDIA GPU")
    results = gpu_example.main(["--samples", "20000", "--features", "10", "--dtype", "float64", "--cpu"])
    assert "GPU (" in capsys.readouterr().out
    for gpu_row, cpu_row in zip(results["gpu"], results["cpu"]):
        assert gpu_row["success"] and isinstance(gpu_row["x"], cupy.ndarray)
        np.testing.assert_allclose(gpu_row["x"].get(), cpu_row["x"], atol=1e-7)


@pytest.mark.parametrize("data", ["iris", "synthetic"])
def test_dualads_hessp_is_the_closed_form_and_trust_krylov_reaches_rounding_with_either(cpu_example, data):
    """dualad's hessp equals the logistic loss's H v written out by hand at every point SciPy's
    trust-krylov asks for; with either pair trust-krylov reaches |grad| < 1e-6 at gtol = 1e-8
    and converges at 1e-6. Whether it *reports* success at 1e-8 turns on the last bits of f,
    which differ between CPUs' BLAS kernels, so that is not asserted."""
    if data == "iris":
        if not cpu_example.iris_path().exists():
            pytest.skip("this SciPy installation ships no test data (iris.arff)")
        x, y, _ = cpu_example.load_iris()
    else:
        x, y, _ = cpu_example.make_synthetic(400, 6)
    loss = cpu_example.make_loss(x, y, 1e-3)
    closed = cpu_example.closed_form(x, y, 1e-3)
    # The hand-written pair, checked against central differences of the loss and its gradient.
    rng = np.random.default_rng(0)
    w, v, h = 0.3 * rng.standard_normal(x.shape[1]), rng.standard_normal(x.shape[1]), 1e-5
    assert closed[0](w) @ v == pytest.approx((loss(w + h * v) - loss(w - h * v)) / (2 * h), rel=1e-7)
    np.testing.assert_allclose(closed[1](w, v), (closed[0](w + h * v) - closed[0](w - h * v)) / (2 * h),
                               rtol=1e-6, atol=1e-10)

    strict = cpu_example.against_closed_form(loss, closed, np.zeros(x.shape[1]), 1e-8)
    # dualad's H v at the example's points: its start, iterates and directions
    assert strict["products"] >= 10 and strict["hessp_rel_diff"] < 1e-12
    for run in ("dualad", "closed form"):  # both reach rounding level, converged or not
        assert strict[run]["grad_norm"] < 1e-6, strict
    loose = cpu_example.against_closed_form(loss, closed, np.zeros(x.shape[1]), 1e-6)
    assert loose["dualad"]["success"] and loose["closed form"]["success"], loose
    said = cpu_example.describe(strict)
    assert f"{strict['hessp_rel_diff']:.1e}" in said and "a bug" not in said
