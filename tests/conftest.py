"""Hypothesis profiles: ``ci`` (bounded, derandomized, no deadline) under CI=true.

Every test runs in CI: the whole suite, table sweeps over every backend, dtype
and transform included, takes about 8 minutes on CI's two cores.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))
