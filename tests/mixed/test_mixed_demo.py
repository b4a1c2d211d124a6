"""The demo (``python -m mixed.demo``, ``dualad-demo``) runs and states each timing
as a ratio with what it means; the figures themselves are the machine's, so only
their form is checked."""

from __future__ import annotations

import math
import re
from pathlib import Path

from mixed import demo

ROOT = Path(__file__).resolve().parents[2]
RATIO = re.compile(r"^   (?P<name>[a-z_]+ / [a-z_]+) = (?P<value>\S+): (?P<meaning>.+) "
                   r"\((?P<t>\S+) ms / (?P<base>\S+) ms\)$")
EXPECTED = {"jacfwd / f", "value_and_grad / loss", "hvp / value_and_grad", "newton_cg / value_and_grad"}


def test_the_demo_states_each_timing_as_a_ratio_and_what_it_means(capsys):
    demo.main(n_samples=500, n_features=8, steps=50, repeats=3)
    out = capsys.readouterr().out
    assert "each time is the median of 3 runs" in out.splitlines()[0]
    for heading in ("1. forward-mode sensitivities", "2. reverse-mode gradient", "3. Newton-CG"):
        assert heading in out
    assert "success=True" in out
    ratios = {m["name"]: m for m in map(RATIO.match, out.splitlines()) if m}
    assert set(ratios) == EXPECTED, out
    for name, m in ratios.items():
        for figure in (m["value"], m["t"], m["base"]):
            assert math.isfinite(float(figure)) and float(figure) > 0, f"{name}: {m.group(0)}"
        assert m["value"] in m["meaning"], f"{name}: the explanation quotes the ratio: {m.group(0)}"


def test_the_dualad_demo_command_runs_the_demo():
    assert 'dualad-demo = "mixed.demo:main"' in (ROOT / "pyproject.toml").read_text()
