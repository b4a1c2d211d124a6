"""examples/logistic_regression_dask.py runs, small, on a threads LocalCluster,
and its data are drawn chunk by chunk, the same wherever they are drawn."""

from __future__ import annotations

import numpy as np
import pytest
from _support.examples import load_example

dask = pytest.importorskip("dask")
pytest.importorskip("distributed")

pytestmark = pytest.mark.dask


@pytest.fixture(scope="module")
def example():
    return load_example("logistic_regression_dask")


def test_the_example_fits_on_a_cluster_as_numpy_does(example, capsys):
    # A memory limit far above the test process's size: a worker in this process
    # pauses when the process passes 80% of it.
    out = example.main(["--samples", "2000", "--features", "3", "--chunk-rows", "1000", "--threads",
                        "--tol", "1e-6", "--dashboard-address", ":0", "--worker-memory", "16GiB", "--check"])
    printed = capsys.readouterr().out
    assert out["success"], out["message"]
    assert out["max_difference_from_numpy"] <= 1e-10
    for expected in ("NOT real data", "2,000 samples, 4 weights", "2 chunks of up to 1,000 rows",
                     "2 thread workers", "dashboard: http", "step   1: loss", "gradient norm"):
        assert expected in printed, (expected, printed)
    assert printed.count("  step ") == out["nit"]


def test_data_are_drawn_per_chunk_from_the_seed(example):
    x, y = example.make_data(10, 2, 4, seed=3)
    assert x.chunks == ((4, 4, 2), (3,)) and y.chunks == ((4, 4, 2),)
    xs, ys = dask.compute(x, y, scheduler="sync")
    for i, (start, rows) in enumerate([(0, 4), (4, 4), (8, 2)]):
        xb, yb = example.draw_block(rows, 2, 3, i)
        np.testing.assert_array_equal(xs[start:start + rows], xb)
        np.testing.assert_array_equal(ys[start:start + rows], yb)
    assert np.all(xs[:, 0] == 1.0) and set(np.unique(ys)) <= {-1.0, 1.0}


def test_the_labels_follow_the_model(example):
    """Not real data: the fraction of +1 labels matches sigmoid(X @ w*) on average."""
    x, y = dask.compute(*example.make_data(40_000, 3, 10_000, seed=1), scheduler="sync")
    p = 1.0 / (1.0 + np.exp(-(x @ example.true_weights(3, 1))))
    assert abs(np.mean(y == 1.0) - np.mean(p)) < 0.01
