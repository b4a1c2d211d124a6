"""Three of ADBench's four problems (arXiv 1807.10129), written as their authors wrote them.

One module per problem: ``gmm`` (a Gaussian mixture's objective and gradient), ``ba``
(bundle adjustment's sparse Jacobian) and ``lstm`` (an LSTM's loss and gradient). Each
holds the objective in plain NumPy, taking the namespace ``xp`` its functions come from
(so that ``benchmarks/compare.py`` runs the same expression in JAX and PyTorch), a data
generator with a fixed seed (ADBench's distributions and sizes, no data files), and
its derivatives in dualad, eager and under ``dualad.jit``. The asv classes are in
``benchmarks/bench_adbench.py``; ADBench's hand tracking is not here yet (issue 36).
"""

import numpy as np


def readonly(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only, so that no benchmark can alter another's inputs."""
    a.flags.writeable = False
    return a
