"""``benchmarks/compare.py`` runs end to end (dualad and NumPy only, smallest sizes).

It runs in a subprocess: the script pins its process to ``--threads`` CPUs,
which must not leak into the test run.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ["chain", "rosenbrock", "mlp", "hessian50", "scalar", "newton", "gmm", "ba", "hand", "lstm"]


def _compare(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "benchmarks.compare", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_every_workload_runs_and_is_saved(tmp_path):
    done = _compare("--quick", "--sizes", "100", "--peers", "none", "--only", *WORKLOADS,
                    "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(!)" not in done.stdout  # a result that disagreed with dualad's
    report = json.loads((tmp_path / "compare.json").read_text())
    assert report["machine"]["libraries"] == ["numpy", "dualad"]
    timed = {(row["workload"], row["op"]) for row in report["rows"] if "dualad" in row["libraries"]}
    assert {w for w, _ in timed} == set(WORKLOADS)
    assert {("rosenbrock", op) for op in ("jvp", "grad", "hvp")} <= timed
    for row in report["rows"]:
        for result in row["libraries"].values():
            assert result["seconds"] > 0 and result["check"] == ""
    table = (tmp_path / "compare.md").read_text()
    assert table.startswith("| workload | size | op | baseline s | dualad |")


def test_an_unknown_peer_is_refused_by_name(tmp_path):
    done = _compare("--peers", "tensorflow", "--out", str(tmp_path))
    assert done.returncode == 2
    assert "--peers: unknown tensorflow" in done.stderr


def test_the_ode_peers_script_runs_with_the_libraries_it_finds():
    """``benchmarks/ode_peers.py``: dualad's row always (its gradient against itself), a
    peer's where it is installed, a line saying so where it is not."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.ode_peers", "--n", "2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 6 |")]
    assert rows[0].startswith("| 6 | dualad (SciPy RK45) |") and rows[0].endswith("| 0.0e+00 |")
    for peer in ("torchdiffeq", "diffrax"):
        assert any(peer in line for line in done.stdout.splitlines()), done.stdout


def test_the_solution_peers_script_runs_with_the_libraries_it_finds():
    """``benchmarks/solution_peers.py``: dualad's rows always (eager, and compiled, settled,
    whose gradient equals the eager one), a peer's where it is installed, a line saying so
    where it is not."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.solution_peers", "--n", "4"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.lower().splitlines()
    for problem in ("root", "minimize"):
        rows = [line for line in lines if line.startswith(f"| `{problem}` | 4 | dualad")]
        assert len(rows) == 2, done.stdout
        assert rows[0].endswith("| 0.0e+00 |"), done.stdout  # the eager gradient: the reference
        assert float(rows[1].split("|")[-2]) < 1e-12, done.stdout  # the compiled gradient
    for peer in ("jax", "optimistix"):
        assert any(peer in line for line in lines), done.stdout
