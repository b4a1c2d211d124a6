"""examples/train_mlp.py runs and its loss falls."""

import subprocess
import sys

import numpy as np
from _support.examples import EXAMPLES, load_example


def _load():
    return load_example("train_mlp")


def test_training_reduces_the_loss():
    result = _load().main(steps=80, verbose=False)
    assert result["final"] < result["initial"] / 2, result
    train = result["train"]
    assert len(train) == 80 and np.mean(train[-10:]) < np.mean(train[:10]) / 2


def test_dropout_is_inverted_and_off_at_evaluation():
    mlp = _load()
    rng = np.random.default_rng(0)
    h = np.ones((2000, 50))
    dropped = mlp.dropout(h, 0.25, rng)
    assert abs(np.mean(dropped == 0.0) - 0.25) < 0.01
    assert abs(dropped.mean() - 1.0) < 0.02  # kept units are scaled by 1 / (1 - p)
    assert mlp.dropout(h, 0.25, None) is h


def test_the_script_prints_a_falling_loss():
    out = subprocess.run([sys.executable, str(EXAMPLES / "train_mlp.py"), "40"], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    lines = out.splitlines()
    assert lines[0].startswith("initial loss") and lines[-1].startswith("final loss")
    initial, final = float(lines[0].split()[2]), float(lines[-1].split()[2])
    assert final < initial
