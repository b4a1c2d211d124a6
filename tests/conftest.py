"""Hypothesis profiles: ``ci`` (bounded, derandomized, no deadline) under CI=true.

Under CI=true, tests marked ``sampled`` (sweeps of the whole table over a
second backend, dtype or transform, each already covered on NumPy float64)
run a fixed half: those whose id hashes even. Run without CI, every one runs.
"""

import os
import zlib

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("CI"):
        return
    kept, dropped = [], []
    for item in items:
        odd = item.get_closest_marker("sampled") and zlib.crc32(item.nodeid.encode()) & 1
        (dropped if odd else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
