"""The ``reverse`` package (reverse mode), as ``dualad.reverse``: the same
module object, so ``from dualad import reverse`` and ``import reverse`` agree.
The module replaces itself in ``sys.modules``, so pytest does not collect
it for doctests (``--ignore`` in pyproject.toml); ``tests/test_layout.py``
checks it.
"""

from dualad._alias import become

become(__name__, "reverse")
