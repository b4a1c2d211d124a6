"""The linear-algebra entries' shared pieces: the result types (named tuples,
as ``numpy.linalg``'s), constants in an operand's backend and dtype, matrix
pieces and argument checks.
"""

from __future__ import annotations

from operator import itemgetter

from dualad._base.backend import namespace_of
from dualad._base.shapes import dtype_of, is_complex, ndim_of, raw, shape_of
from dualad._primitives import elementwise as _ew
from dualad._primitives import shape as _shape

# Rules call functions rather than operators: ``raw_array * value`` would ask
# the raw array's own ``__mul__`` first, and strict array-API arrays refuse
# foreign operands instead of returning NotImplemented.
_add, _sub, _mul, _div, _neg = _ew.add, _ew.subtract, _ew.multiply, _ew.divide, _ew.negative
_T = _shape.matrix_transpose


def _H(x):
    """The conjugate transpose of a stack of matrices (the transpose of real ones)."""
    return _ew.conj(_T(x))


def _result_type(name, fields, doc):
    """A tuple with named fields, like ``numpy.linalg``'s results.

    Unlike a ``namedtuple`` it is built from one iterable, as ``tuple`` is,
    so code that rebuilds containers generically (``type(t)(items)``, as the
    transforms do with outputs) keeps the type and its field names.
    """
    def __new__(cls, iterable):
        values = tuple(iterable)
        if len(values) != len(fields):
            raise TypeError(f"{name} needs {len(fields)} values {fields}, got {len(values)}")
        return tuple.__new__(cls, values)

    def __repr__(self):
        return f"{name}(" + ", ".join(f"{f}={v!r}" for f, v in zip(fields, self)) + ")"

    namespace = {"__slots__": (), "__new__": __new__, "__repr__": __repr__, "__doc__": doc,
                 "__getnewargs__": lambda self: (tuple(self),), "__module__": __name__}
    for i, f in enumerate(fields):
        namespace[f] = property(itemgetter(i), doc=f"Alias for field number {i}")
    return type(name, (tuple,), namespace)


SlogdetResult = _result_type("SlogdetResult", ("sign", "logabsdet"), "The result of :func:`slogdet`.")
QRResult = _result_type("QRResult", ("Q", "R"), "The result of :func:`qr`.")
EighResult = _result_type("EighResult", ("eigenvalues", "eigenvectors"), "The result of :func:`eigh`.")
SVDResult = _result_type("SVDResult", ("U", "S", "Vh"), "The result of :func:`svd`.")
EigResult = _result_type("EigResult", ("eigenvalues", "eigenvectors"), "The result of :func:`eig`.")


# -- helpers: constants in the operand's backend and dtype, and matrix pieces --
def constant_like(like, creator, *args):
    """``xp.<creator>(*args)`` in the namespace, dtype and device of ``like``."""
    r = raw(like)
    fn = getattr(namespace_of([r]), creator)
    device = getattr(r, "device", None)
    if device is not None:
        try:
            return fn(*args, dtype=r.dtype, device=device)
        except TypeError:  # a namespace without the keyword: its current device
            pass
    return fn(*args, dtype=r.dtype)


def eye_like(like, n):
    return constant_like(like, "eye", n)


def _eye_mask(like, n):
    return eye_like(like, n) == 1


def _tril_mask(like, n, k=0, cols=None):
    """A 0/1 float matrix (n x n, or n x cols) that is 1 on and below the k-th diagonal."""
    ones = constant_like(like, "ones", (n, n if cols is None else cols))
    return namespace_of([ones]).tril(ones, k=k)


def _any(mask):
    """Whether any entry of a raw boolean array is true (control flow, not math)."""
    if isinstance(mask, bool):
        return mask
    return bool(namespace_of([mask]).any(mask))


def _sym(x):
    return _mul(_add(x, _T(x)), 0.5)


def diag_part(x):
    """The diagonals of a stack of square matrices, shape ``(..., n)``."""
    return _shape.sum(_mul(x, eye_like(x, shape_of(x)[-1])), axis=-1)


def _diag_embed(v):
    """Diagonal matrices from a stack of vectors."""
    return _mul(_shape.expand_dims(v, -1), eye_like(v, shape_of(v)[-1]))


def _row(v):
    """``(..., n) -> (..., 1, n)``: scales the columns of a matrix."""
    return _shape.expand_dims(v, -2)


def _col(v):
    """``(..., n) -> (..., n, 1)``: scales the rows of a matrix."""
    return _shape.expand_dims(v, -1)


def _mat(v):
    """``(...) -> (..., 1, 1)``: a scalar per matrix."""
    return _shape.expand_dims(v, (-2, -1))


def _lift(t, ndim):
    """Give a chunk of tangents ``(k,) + shape`` room to broadcast to ``ndim`` dims."""
    s = shape_of(t)
    if len(s) - 1 >= ndim:
        return t
    return _shape.reshape(t, s[:1] + (1,) * (ndim - len(s) + 1) + s[1:])


def _batched(primals, tangents):
    return any(t is not None and ndim_of(t) > ndim_of(p) for p, t in zip(primals, tangents))


def check_matrix(a, name, arg="a", square=True):
    s = shape_of(a)
    if len(s) < 2:
        raise ValueError(f"{name}: {arg} must be a matrix or a stack of matrices "
                         f"(ndim >= 2), got shape {s} (ndim {len(s)})")
    if square and s[-1] != s[-2]:
        raise ValueError(f"{name}: {arg} must be square in its last two axes, "
                         f"got shape {s} ({s[-2]} x {s[-1]})")


def _real_only(a, name):
    """Refuse complex input to a rule written for real matrices (transposes, not
    conjugate transposes), rather than return a wrong derivative."""
    if is_complex(a):
        raise NotImplementedError(
            f"{name}: complex matrices are not supported yet (got dtype {dtype_of(raw(a))}); "
            "its derivative rules assume real input")


def _broadcast_batch(name, *shapes):
    try:
        return _shape._broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{name}: the batch shapes {', '.join(map(str, shapes))} "
                         "do not broadcast together") from None
