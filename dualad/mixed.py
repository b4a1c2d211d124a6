"""The ``mixed`` package (Hessian-vector products, Newton solvers), as ``dualad.mixed``: the same
module object, so ``from dualad import mixed`` and ``import mixed`` agree.
The module replaces itself in ``sys.modules``, so pytest does not collect
it for doctests (``--ignore`` in pyproject.toml); ``tests/test_layout.py``
checks it.
"""

from dualad._alias import become

become(__name__, "mixed")
