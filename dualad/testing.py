"""``check_grads``: the gradient-checking oracle shared by every package.

It checks the derivatives that dualad computes for *your* function against
independent references, along one random direction per check:

- ``"fwd"``: the JVP (:func:`dualad.jvp`) against central finite differences.
- ``"rev"``: the VJP against the JVP through the adjoint identity
  ``<u, J v> = <J^T u, v>``. The VJP comes from the reverse mode registered
  with :func:`dualad.extend.register_vjp` (importing ``reverse`` registers ``reverse.vjp``),
  so this module never imports a package built on top of ``dualad``.
- ``order=2`` (or more) repeats the checks on the JVP function
  ``(x, v) -> J(x) v`` and the VJP function ``(x, u) -> J(x)^T u``, as HIPS
  autograd and JAX do, so second derivatives are checked too.

Tolerances and finite-difference steps depend on the dtype (float32: step
``2**-10``, tolerance ``2e-3``; float64: step ``1e-6``, tolerance ``1e-5``).
The rounding noise of the finite difference itself (about
``eps_dtype * |f| / step``) is added to the absolute tolerance, so large
function values in float32 do not cause false alarms. Inputs of lower
precision than float64 are differenced in float64 where the function takes
it (the JVP is still computed, and its dtype checked, in theirs).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import array_api_compat
import numpy as np

from dualad._base.backend import SCALAR_TYPES, is_float_dtype, namespace_of, to_host
from dualad._base.checks import check_output_leaves, describe
from dualad._base.reverse_mode import registered_vjp
from dualad._base.shapes import raw, shape_of, zeros
from dualad._base.tree import flatten
from dualad._forward.transforms import jvp

__all__ = ["check_grads"]

# Keyed by the number of mantissa-relevant bits of the dtype: finfo(dtype).bits.
_STEP = {16: 2.0 ** -5, 32: 2.0 ** -10, 64: 1e-6}
_TOL = {16: 1e-2, 32: 2e-3, 64: 1e-5}
_SMALLEST_NORMAL = {bits: float(np.finfo(f"float{bits}").tiny) for bits in _STEP}
_MODES = ("fwd", "rev")


def check_grads(f: Callable, args: Any, order: int = 2, modes: Sequence[str] = ("fwd", "rev"),
                eps: float | None = None, rtol: float | None = None, atol: float | None = None,
                rng: Any = None) -> None:
    """Check the derivatives of ``f`` at ``args``; raise ``AssertionError`` if wrong.

    Parameters
    ----------
    f : callable
        A function of arrays (NumPy, CuPy, array API) or Python floats, or of
        tuples/lists/dicts of them, written with ``dualad.ops``, operators,
        NumPy functions or array-API calls. Its output may be a pytree too;
        non-floating output leaves (comparisons) are not checked.
    args : tuple or single argument
        A tuple is the positional arguments of ``f``; anything else (an array,
        a float, a list or a dict) is its only argument. Floating leaves are
        differentiated; integer and boolean leaves are held constant.
    order : int
        1 checks first derivatives; 2 (default) also checks the JVP/VJP
        functions themselves, and so on.
    modes : sequence of {"fwd", "rev"}
        ``"rev"`` needs a registered reverse mode (``import reverse`` registers
        one, see :func:`dualad.extend.register_vjp`); without it a ``NotImplementedError`` is
        raised (the check is never skipped silently).
    eps : float, optional
        Finite-difference step. By default two are tried, and the JVP must
        match the differences at one of them: the least precise floating
        dtype's step times the magnitude of the smallest argument where that
        is below 1 (a function of small inputs), and the dtype's step alone
        (tiny inputs beside larger constants the function closes over).
    rtol, atol : float, optional
        Tolerances; by default ``2e-3`` for float32, ``1e-5`` for float64.
    rng : int or numpy.random.Generator, optional
        Seed or generator for the random directions (default seed 0).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import ops
    >>> from dualad.testing import check_grads
    >>> check_grads(lambda x, y: ops.sin(x) * y, (np.array([0.5, 1.0]), np.array(2.0)), modes=("fwd",))

    A wrong derivative is reported with the error found:

    >>> from dualad.extend import bind, elementwise, unregister
    >>> bad = elementwise("bad_square", lambda xp, x: x * x, lambda ans, x: x)  # should be 2 x
    >>> try:
    ...     check_grads(lambda x: bind(bad, x), (np.array([1.0, 2.0]),), modes=("fwd",))
    ... except AssertionError as e:
    ...     print(str(e).splitlines()[0])
    check_grads: JVP of f does not match central finite differences (derivative order 1)
    >>> unregister("bad_square")
    """
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    unknown = [m for m in modes if m not in _MODES]
    if unknown or not modes:
        raise ValueError(f"check_grads: modes must be a non-empty subset of {_MODES}, got {modes!r}")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be a positive int, got {order!r}")
    reverse_vjp = (registered_vjp("check_grads: mode 'rev'", "or pass modes=('fwd',) to check forward "
                                  "mode only") if "rev" in modes else None)
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(0 if rng is None else rng)

    args = args if isinstance(args, tuple) else (args,)
    leaves, build = flatten(args)
    where = [i for i, leaf in enumerate(leaves) if _is_float(leaf)]
    if not where:
        raise ValueError("check_grads: args have no floating-point leaf to differentiate "
                         f"(leaf types: {sorted({type(leaf).__name__ for leaf in leaves})})")

    def g(*xs):
        full = list(leaves)
        for i, x in zip(where, xs):
            full[i] = x
        return _float_outputs(f(*build(full)))

    _check_outputs(f(*args))

    bits = min(_bits(leaves[i]) for i in where)
    # By default two steps: one on the scale of the smallest input (for a function of inputs
    # near 5e-5), and the dtype's own (for tiny inputs of a function whose scale other,
    # larger numbers set); a right JVP matches the differences at one of them.
    steps = (eps,) if eps is not None else tuple(dict.fromkeys(
        (_STEP[bits] * _scale([leaves[i] for i in where], bits), _STEP[bits])))
    opts = _Options(steps=steps,
                    rtol=_TOL[bits] if rtol is None else rtol,
                    atol=_TOL[bits] if atol is None else atol,
                    rng=rng, reverse_vjp=reverse_vjp)
    _check(g, [leaves[i] for i in where], order, modes, opts, "f", 1)


class _Options:
    def __init__(self, steps, rtol, atol, rng, reverse_vjp):
        self.steps, self.rtol, self.atol, self.rng = steps, rtol, atol, rng
        self.reverse_vjp = reverse_vjp


def _check(g, xs, order, modes, opts, name, depth):
    if "fwd" in modes:
        v = [_random_like(x, opts.rng) for x in xs]
        _check_jvp(g, xs, v, opts, name, depth)
        if order > 1:
            n = len(xs)

            def g_jvp(*xv):
                return jvp(g, tuple(xv[:n]), tuple(xv[n:]))[1]

            _check(g_jvp, xs + [_random_like(x, opts.rng) for x in xs], order - 1, modes, opts,
                   f"jvp({name})", depth + 1)
    if "rev" in modes:
        out = g(*xs)
        out_leaves, build_out = flatten(out)
        u = [_random_like(o, opts.rng) for o in out_leaves]
        _check_vjp(g, xs, build_out(u), opts, name, depth)
        if order > 1 and out_leaves:
            n = len(xs)

            def g_vjp(*xu):
                _, pullback = opts.reverse_vjp(g, *xu[:n])
                cots = pullback(build_out(list(xu[n:])))
                return tuple(zeros(x) if c is None else c for c, x in zip(cots, xu[:n]))

            _check(g_vjp, xs + u, order - 1, modes, opts, f"vjp({name})", depth + 1)


def _check_jvp(g, xs, v, opts, name, depth):
    out, t = jvp(g, tuple(xs), tuple(v))
    expected = g(*xs)
    what = f"JVP of {name}"
    out_l, t_l, exp_l = flatten(out)[0], flatten(t)[0], flatten(expected)[0]
    if len(t_l) != len(exp_l):
        raise AssertionError(f"check_grads: {what} has {len(t_l)} output leaves, f has {len(exp_l)}")
    for j, (o, tj, e) in enumerate(zip(out_l, t_l, exp_l)):
        _check_meta(what, j, "tangent", tj, e)
        _assert_close(f"check_grads: primal output of {what} differs from f(x) (derivative order {depth})",
                      j, _np(o), _np(e), opts.rtol, opts.atol)
    first = None
    for eps in opts.steps:  # the JVP must match the differences at one of the steps
        try:
            return _compare_differences(g, xs, v, eps, t_l, exp_l, opts, what, depth)
        except AssertionError as err:
            first = first or err
    raise first


def _compare_differences(g, xs, v, eps, t_l, exp_l, opts, what, depth):
    plus, minus = _differences(g, xs, v, eps)
    for j, (tj, e, p, m) in enumerate(zip(t_l, exp_l, flatten(plus)[0], flatten(minus)[0])):
        pn, mn = _np(p), _np(m)
        fd = (pn - mn) / (2 * eps)
        # rounding in f(x + h v) and f(x - h v), magnified by 1 / (2 h); on the scale of the
        # whole output, since an entry that cancels to ~0 (a correlation's diagonal) carries
        # the rounding of the terms that cancelled, not of its own size
        noise = 8 * _finfo_eps(e) * (_largest(pn) + _largest(mn)) / (2 * eps)
        _assert_close(f"check_grads: {what} does not match central finite differences "
                      f"(derivative order {depth})", j, _np(tj), fd, opts.rtol, opts.atol + noise,
                      f"finite-difference step eps={eps:g}")


def _check_vjp(g, xs, u, opts, name, depth):
    out, pullback = opts.reverse_vjp(g, *xs)
    expected = g(*xs)
    what = f"VJP of {name}"
    for j, (o, e) in enumerate(zip(flatten(out)[0], flatten(expected)[0])):
        _assert_close(f"check_grads: primal output of {what} differs from f(x) (derivative order {depth})",
                      j, _np(o), _np(e), opts.rtol, opts.atol)
    cots = pullback(u)
    if not isinstance(cots, (tuple, list)) or len(cots) != len(xs):
        raise AssertionError(f"check_grads: {what} returned {type(cots).__name__} of length "
                             f"{len(cots) if hasattr(cots, '__len__') else '?'}; expected a tuple "
                             f"with one cotangent per input ({len(xs)})")
    v = [_random_like(x, opts.rng) for x in xs]
    _, jv = jvp(g, tuple(xs), tuple(v))
    lhs, lhs_scale = _inner(flatten(u)[0], flatten(jv)[0])
    cots = [zeros(x) if c is None else c for c, x in zip(cots, xs)]
    for i, (c, x) in enumerate(zip(cots, xs)):
        _check_meta(what, i, "cotangent of input", c, x)
    rhs, rhs_scale = _inner(cots, v)
    err = abs(lhs - rhs)
    allowed = opts.atol + opts.rtol * max(lhs_scale, rhs_scale)
    if not err <= allowed:
        raise AssertionError(
            f"check_grads: {what} does not match the JVP through <u, J v> = <J^T u, v> "
            f"(derivative order {depth})\n  <u, J v> = {lhs!r} (JVP), <J^T u, v> = {rhs!r} (VJP)\n"
            f"  error {err:.3g} > allowed {allowed:.3g} (rtol={opts.rtol:g}, atol={opts.atol:g})")


def _check_outputs(out):
    """An output with nothing to check (None, or no floating leaf) fails: checking
    nothing and passing would hide a function that forgot its ``return``."""
    leaves = flatten(out)[0]
    check_output_leaves(leaves, out, "check_grads")
    if not any(_is_float(leaf) for leaf in leaves):
        what = describe(out) if len(leaves) == 1 else f"{len(leaves)} leaves, none floating"
        raise AssertionError(f"check_grads: f returned no floating-point output to check (got {what})")


def _float_outputs(out):
    """``out`` without its non-floating leaves (comparisons are not differentiated)."""
    leaves, build = flatten(out)
    if len(leaves) == 1 and not isinstance(out, (tuple, list, dict)):
        return out if _is_float(out) else ()
    return tuple(leaf for leaf in leaves if _is_float(leaf))


def _is_float(x) -> bool:
    x = raw(x)
    if isinstance(x, bool):
        return False
    if isinstance(x, float):
        return True
    if isinstance(x, SCALAR_TYPES) or not hasattr(x, "dtype"):
        return False
    return is_float_dtype(namespace_of([x]), x.dtype)


def _bits(x) -> int:
    if isinstance(x, float):
        return 64
    return int(np.finfo(np.dtype(str(x.dtype).rsplit(".", 1)[-1])).bits)


def _finfo_eps(x) -> float:
    return 2.0 ** -52 if _bits(x) == 64 else 2.0 ** -23 if _bits(x) == 32 else 2.0 ** -10


def _np(x) -> np.ndarray:
    """A float64 NumPy copy of a raw array or float, from any backend; complex128 for
    complex numbers (float64 would drop their imaginary parts)."""
    if isinstance(x, SCALAR_TYPES) or isinstance(x, np.ndarray):
        host = np.asarray(x)
    elif type(x).__module__.startswith("cupy"):
        host = x.get()
    else:
        try:
            host = np.from_dlpack(x)
        except (TypeError, AttributeError, RuntimeError, BufferError):
            host = np.asarray(x)
    return np.asarray(host, dtype=np.complex128 if np.iscomplexobj(host) else np.float64)


def _largest(a: Any) -> float:
    """The largest finite magnitude among the numbers of ``a`` (0.0 where there is none)."""
    a = np.abs(np.atleast_1d(a))
    finite = a[np.isfinite(a)]
    return float(finite.max()) if finite.size else 0.0


def _scale(xs, bits: int) -> float:
    """The default step's factor: the largest magnitude of the input of the smallest one,
    at most 1. A function of inputs near 5e-5 (a correlation of such numbers) changes on
    that scale, where a step of 1e-6 is no small change; the finite-difference noise
    allowed grows as the step shrinks. It is at least the square root of the dtype's
    smallest normal number, so the step stays normal: GPUs flush subnormal products to
    zero, which made ``x + step * v`` equal ``x``."""
    sizes = [_largest(x if isinstance(x, SCALAR_TYPES) else to_host(x)) for x in xs]
    sizes = [s for s in sizes if s > 0.0]
    return max(_SMALLEST_NORMAL[bits] ** 0.5, min(1.0, min(sizes)) if sizes else 1.0)


def _random_like(x, rng):
    """A standard normal draw with the shape, dtype and backend of ``x``."""
    draw = rng.standard_normal(shape_of(x))
    if isinstance(x, float):
        return float(draw)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(draw, dtype=x.dtype)
    xp = namespace_of([x])
    try:  # array_api_compat's device(): Dask arrays have no ``.device``
        return xp.asarray(draw, dtype=x.dtype, device=array_api_compat.device(x))
    except TypeError:  # namespaces without a ``device`` keyword
        return xp.asarray(draw, dtype=x.dtype)


def _axpy(a, v, x):
    return x + a * v


def _differences(g, xs, v, eps):
    """``g`` at ``x + eps v`` and ``x - eps v``: in float64 where the inputs are of lower
    precision, so that the differences carry float64's rounding rather than float32's
    (a GPU's float32 SVD rounded more than the noise allowed for a small output beside
    large ones). A function that takes only its own dtype is differenced in it."""
    def at(xs, v):
        return tuple(g(*[_axpy(h, vi, x) for x, vi in zip(xs, v)]) for h in (eps, -eps))

    wide = [_widened(x) for x in xs]
    if any(w is not x for w, x in zip(wide, xs)):
        try:
            return at(wide, [_widened(vi) for vi in v])
        except Exception:  # noqa: BLE001 (the same call in the inputs' dtype decides)
            pass
    return at(xs, v)


def _widened(x):
    """``x`` in float64 (complex128) if it is a float array or scalar of lower precision."""
    if isinstance(x, SCALAR_TYPES) or not _is_float(x) or _bits(x) == 64:
        return x
    if isinstance(x, np.generic):
        return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    xp = namespace_of([x])
    complex_ = "complex" in str(x.dtype)
    return xp.astype(x, xp.complex128 if complex_ else xp.float64)


def _check_meta(what, j, kind, t, like):
    """A tangent/cotangent has its primal's shape and dtype (float32 stays float32)."""
    if isinstance(like, float):  # a Python float, or NumPy's float64 scalar
        if not (isinstance(t, float) or (shape_of(t) == () and _is_float(t))):
            raise AssertionError(f"check_grads: {what}: {kind} {j} should be a float like its "
                                 f"primal, got {type(t).__name__}")
        return
    if shape_of(t) != shape_of(like):
        raise AssertionError(f"check_grads: {what}: {kind} {j} has shape {shape_of(t)}, "
                             f"expected {shape_of(like)}")
    if type(t) is float or getattr(t, "dtype", None) != like.dtype:
        raise AssertionError(f"check_grads: {what}: {kind} {j} has dtype "
                             f"{getattr(t, 'dtype', type(t).__name__)}, expected {like.dtype}")


def _inner(a_leaves, b_leaves) -> tuple[float, float]:
    """The real part of the sum of ``a * b`` over all leaves (no conjugation: the pairing
    a VJP in JAX's convention preserves), and the sum of ``|a * b|`` (its rounding scale)."""
    total, scale = 0.0, 0.0
    for a, b in zip(a_leaves, b_leaves):
        prod = np.real(_np(a) * _np(b))
        total += float(np.sum(prod))
        scale += float(np.sum(np.abs(prod)))
    return total, scale


def _assert_close(title, j, actual, expected, rtol, atol, note=""):
    actual, expected = np.broadcast_arrays(actual, expected)
    both_nan = np.isnan(actual) & np.isnan(expected)
    same_inf = np.isinf(actual) & (actual == expected)
    with np.errstate(invalid="ignore"):
        err = np.abs(actual - expected)
        bad = ~(both_nan | same_inf | (err <= atol + rtol * np.abs(expected)))
    if not bad.any():
        return
    err = np.where(bad, np.nan_to_num(err, nan=np.inf), 0.0)
    k = np.unravel_index(int(np.argmax(err)), err.shape) if err.ndim else ()
    rel = err[k] / abs(expected[k]) if expected[k] else math.inf
    lines = [title,
             f"  output leaf {j}: {int(bad.sum())} of {bad.size} entries differ; max abs error "
             f"{err[k]:.3g} (relative {rel:.3g}) at index {tuple(int(i) for i in k)}: "
             f"got {actual[k]!r}, expected {expected[k]!r}",
             f"  rtol={rtol:g}, atol={np.max(atol):.3g}" + (f", {note}" if note else "")]
    raise AssertionError("\n".join(lines))
