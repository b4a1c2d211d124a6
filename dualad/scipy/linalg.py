"""``scipy.linalg``'s triangular solves, whose results carry derivatives.

``solve_triangular``, ``cho_factor`` and ``cho_solve`` with SciPy's signatures: SciPy
computes (its numbers stay SciPy's, and ``check_finite`` is SciPy's check, at every call of
a compiled function too), and the result is differentiable with respect to ``b`` and to
the matrix: for the solves, in the entries SciPy reads (one triangle); for
``cho_factor``, as ``cholesky`` (the perturbation symmetrized, so both triangles), in
every mode. A JVP solves once more with the same matrix, a VJP once with its transpose.
One real matrix of shape ``(n, n)`` (a complex one is refused; ``dualad.vmap`` maps over a
stack), and ``b`` of shape ``(n,)`` or ``(n, k)``. ``overwrite_a`` and ``overwrite_b``
are accepted and ignored: nothing is overwritten.

Examples
--------
>>> import numpy as np
>>> import reverse
>>> from dualad.scipy.linalg import cho_factor, cho_solve
>>> def energy(a, b):   # b^T A^-1 b, by the Cholesky factor
...     return b @ cho_solve(cho_factor(a), b)
>>> a, b = np.array([[4.0, 2.0], [2.0, 5.0]]), np.array([6.0, 7.0])
>>> float(energy(a, b))
13.0
>>> reverse.grad(energy, argnums=1)(a, b)   # 2 A^-1 b
array([2., 2.])
"""

from __future__ import annotations

from typing import Any

from dualad._base.checks import check_differentiable, describe
from dualad._base.shapes import dtype_of, is_complex, raw, shape_of
from dualad._primitives.linalg import triangular
from dualad.scipy._host import float_operand

__all__ = ["cho_factor", "cho_solve", "solve_triangular"]

_TRANS = {None: 0, 0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}  # SciPy's codes


def _operand(x: Any, who: str, name: str) -> Any:
    """``x`` as the solve takes it (:func:`~dualad.scipy._host.float_operand`: an array of
    another library stays in it, CuPy's solve being ``cupyx.scipy.linalg``'s). Complex
    ``x`` is refused."""
    x = float_operand(x)
    check_differentiable(x, f"{who}: {name}")
    if is_complex(x):
        raise NotImplementedError(f"{who}: {name} is complex ({dtype_of(raw(x))}); the derivative "
                                  "rules are written for real matrices")
    return x


def _matrix(a: Any, who: str, name: str) -> Any:
    a = _operand(a, who, name)
    if len(shape_of(a)) != 2 or shape_of(a)[0] != shape_of(a)[1]:
        raise ValueError(f"{who}: {name} must be a square matrix (one: use dualad.vmap for a "
                         f"stack), got shape {shape_of(a)}")
    return a


def _rhs(b: Any, n: int, who: str) -> Any:
    b = _operand(b, who, "b")
    shape = shape_of(b)
    if len(shape) not in (1, 2) or shape[0] != n:
        raise ValueError(f"{who}: b must have shape ({n},) or ({n}, k), the matrix's rows first, "
                         f"got shape {shape}")
    return b


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     check_finite: bool = True) -> Any:
    """The solution of ``a x = b`` for a triangular ``a``, by ``scipy.linalg.solve_triangular``.

    Only ``a``'s lower (``lower=True``) or upper triangle is read, without its diagonal
    where ``unit_diagonal`` (taken as ones), and the derivative is with respect to those
    entries and ``b``. ``trans`` 1 or ``'T'`` (and ``'C'``, the same for real ``a``)
    solves ``a^T x = b``.

    Raises
    ------
    numpy.linalg.LinAlgError
        Where ``a`` is singular (SciPy's).

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad.scipy.linalg import solve_triangular
    >>> a = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> solve_triangular(a, np.array([2.0, 9.0]), lower=True)
    array([1., 2.])
    >>> dualad.jacfwd(lambda b: solve_triangular(a, b, lower=True))(np.ones(2))   # a^-1
    array([[ 0.5  ,  0.   ],
           [-0.125,  0.25 ]])
    """
    who = "dualad.scipy.linalg.solve_triangular"
    if not isinstance(trans, (int, str, type(None))) or trans not in _TRANS:
        raise ValueError(f"{who}: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    a = _matrix(a, who, "a")
    b = _rhs(b, shape_of(a)[0], who)
    return triangular.solve_triangular(a, b, trans=_TRANS[trans], lower=bool(lower),
                                       unit_diagonal=bool(unit_diagonal),
                                       check_finite=bool(check_finite))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple:
    """``(c, lower)``: the Cholesky factor of the symmetric positive definite ``a``, by
    ``scipy.linalg.cho_factor``, for :func:`cho_solve`.

    ``c`` holds the factor in its upper triangle (``lower=True``: lower), and ``a``'s
    entries in the other, as SciPy returns it. The factor reads one triangle of ``a``;
    its derivative is that of ``cholesky((a + a^T) / 2)``, as ``ops.linalg.cholesky``'s
    (it assumes ``a`` symmetric and symmetrizes the perturbation).

    Raises
    ------
    numpy.linalg.LinAlgError
        Where ``a`` is not positive definite (SciPy's).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import derivative
    >>> from dualad.scipy.linalg import cho_factor
    >>> c, lower = cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> c, lower
    (array([[2., 1.],
           [2., 2.]]), False)
    >>> float(derivative(lambda s: cho_factor(s * np.eye(2))[0][0, 0])(4.0))   # of sqrt(s)
    0.25
    """
    a = _matrix(a, "dualad.scipy.linalg.cho_factor", "a")
    return triangular.cho_factor(a, lower=bool(lower), check_finite=bool(check_finite)), bool(lower)


def cho_solve(c_and_lower: tuple, b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """The solution of ``A x = b`` by ``scipy.linalg.cho_solve``, ``A``'s Cholesky factor
    given as :func:`cho_factor` returns it, ``(c, lower)``; differentiable in the factor's
    triangle of ``c`` and in ``b``.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> from dualad.scipy.linalg import cho_factor, cho_solve
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> cho_solve(cho_factor(a), np.array([6.0, 7.0]))
    array([1., 1.])
    >>> def total(a):   # x = A^-1 b = (1, 1); its gradient, -sym(lam x^T), lam = A^-1 (1, 1)
    ...     return cho_solve(cho_factor(a), np.array([6.0, 7.0])).sum()
    >>> reverse.grad(total)(a)                  # lam = (3, 2) / 16
    array([[-0.1875 , -0.15625],
           [-0.15625, -0.125  ]])
    """
    who = "dualad.scipy.linalg.cho_solve"
    if not (isinstance(c_and_lower, (tuple, list)) and len(c_and_lower) == 2):
        raise TypeError(f"{who}: c_and_lower must be the pair (c, lower) that cho_factor "
                        f"returns, got {describe(c_and_lower)}")
    c, lower = c_and_lower
    c = _matrix(c, who, "c")
    b = _rhs(b, shape_of(c)[0], who)
    return triangular.cho_solve(c, b, lower=bool(lower), check_finite=bool(check_finite))
