"""Linear algebra entries, one module per family: matmul (with NumPy's 1-d rules),
``einsum`` and the ``linalg`` family (solve, inv, pinv, det, slogdet, cholesky, qr, lu,
eigh, eig, svd, norm; SciPy's triangular solves, ``solve_triangular``, ``cho_factor`` and
``cho_solve``, which ``dualad.scipy.linalg`` gives SciPy's signatures), each with its JVP
and VJP side by side. ``ops.linalg``
(``dualad/_numpy/linalg.py``) gathers them with the composites built from them.

Every rule is written with the differentiable operations of the table, so a
rule applied to ``Dual``, ``HyperDual`` or tape values is itself
differentiated; only the ``impl`` functions touch the array namespace
``xp``. The JVP rules are written for matrices broadcast from the right, so
a chunk of ``k`` tangents (a leading axis) passes through them unchanged
(``chunked=True``).

Conventions at points where the derivative does not exist or is not unique
(each is stated again in the function's docstring):

- ``det`` is a polynomial, so its derivative (the cofactor matrix) exists
  everywhere; at an exactly singular matrix it is computed from an SVD.
- ``slogdet``: the derivative of ``logabsdet`` at a singular matrix is ``nan``
  (``logabsdet`` is ``-inf`` there); ``sign`` has no derivative.
- ``cholesky`` reads one triangle of its input; its derivative is that of
  ``cholesky((A + A^T) / 2)``, i.e. it assumes symmetric inputs and
  symmetrizes the perturbations. ``eigh`` differentiates what it computes:
  the ``UPLO`` triangle's entries, the other triangle's not at all.
- ``eigh`` and ``svd``: eigenvectors and singular vectors are not
  differentiable where eigenvalues (singular values) coincide (or, for a
  non-square ``svd``, where one is 0); a direction or cotangent that mixes
  the tied pair then gets ``inf``/``nan``, never a silently wrong number.
  A zero coefficient contributes 0 (not ``inf * 0``), so the derivatives of
  the eigenvalues (singular values) alone stay finite, in forward mode and
  on the tape (which passes zeros for unused outputs) alike.
- ``norm``: the 2-norm (and Frobenius norm) has the subgradient 0 at 0, and
  so do the other p-norms; ``abs`` has derivative 0 at 0 and ``max``/``min``
  split ties equally (the ``inf``, 1 and 2 norms).
"""
