"""Hypothesis profiles. ``ci`` (bounded, derandomized, no example database, no
deadline) is the default, so the README's test command draws the same examples on
a fresh clone as in CI and a failure found once does not come back from a saved
database; ``HYPOTHESIS_PROFILE=dev`` draws new examples each run, to explore.

Every test runs in CI: the whole suite, table sweeps over every backend, dtype
and transform included, takes about 8 minutes on CI's two cores.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
