"""dualad's asv benchmark suite (see README.md in this folder).

Every module here is discovered by asv and by ``tests/test_benchmarks_smoke.py``,
which runs each benchmark once at its smallest parameters.
"""
