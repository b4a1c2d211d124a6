"""examples/sensitivities_of_solutions.py runs, small, and each derivative it prints agrees
with its central differences."""

import re
import subprocess
import sys

from _support.examples import EXAMPLES


def test_the_example_runs_and_its_derivatives_match_finite_differences():
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning",
                          str(EXAMPLES / "sensitivities_of_solutions.py"), "--grid", "12"],
                         capture_output=True, text=True, check=True).stdout
    assert float(re.search(r"central differences ([0-9.e-]+)\n", out).group(1)) < 1e-8
    pairs = re.findall(r"= (-?[0-9.]+),? (?:<g, v> = (-?[0-9.]+), )?central differences (-?[0-9.]+)", out)
    assert len(pairs) == 2, out
    for first, second, fd in pairs:
        ours = float(second or first)
        assert abs(ours - float(fd)) <= 1e-4 * abs(float(fd)), out
