"""Hypothesis profiles: ``ci`` (bounded, derandomized, no deadline) under CI=true.

Under CI=true, tests marked ``sampled`` (sweeps of the whole table over a
second backend, dtype or transform, each already covered on NumPy float64)
run a half drawn anew each run: the whole suite does not fit CI's 15 minutes
on two cores. The seed that drew it is printed in the header and the summary;
``DUALAD_SAMPLE_SEED=<seed>`` replays that half, ``DUALAD_SAMPLE_SEED=all``
runs every test. Run without CI, every one runs.
"""

import hashlib
import os
import random

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def _sample_seed() -> str | None:
    """The seed of this run's half of the sampled tests, or None to run them all."""
    seed = os.environ.get("DUALAD_SAMPLE_SEED")
    if seed == "all" or (seed is None and not os.environ.get("CI")):
        return None
    return seed if seed is not None else str(random.SystemRandom().randrange(10**6))


SAMPLE_SEED = _sample_seed()


def in_sample(nodeid: str, seed: str) -> bool:
    """Whether the sampled test ``nodeid`` is in the half that ``seed`` draws (a CRC would
    not do: it is linear, so every seed would draw one of two halves)."""
    return not hashlib.blake2b(f"{seed}:{nodeid}".encode(), digest_size=8).digest()[0] & 1


def _replay_line() -> str:
    return (f"sampled tests: the half drawn by DUALAD_SAMPLE_SEED={SAMPLE_SEED} (set it to replay this run's "
            "half, or to 'all' for every test)")


def pytest_report_header(config):
    return _replay_line() if SAMPLE_SEED is not None else "sampled tests: all of them run"


def pytest_collection_modifyitems(config, items):
    if SAMPLE_SEED is None:
        return
    kept, dropped = [], []
    for item in items:
        out = item.get_closest_marker("sampled") and not in_sample(item.nodeid, SAMPLE_SEED)
        (dropped if out else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_terminal_summary(terminalreporter):
    if SAMPLE_SEED is not None:
        terminalreporter.write_line(_replay_line())
