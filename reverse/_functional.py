"""JAX-style transforms over arrays, floats and pytrees: ``vjp``, ``grad``,
``value_and_grad``, ``jacrev``. Each call opens its own level, so they nest
with each other and with ``dualad``'s forward transforms."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import numpy as np

from dualad import ops
from dualad._checks import (
    check_differentiable,
    check_output_leaves,
    check_scalar_output,
    describe,
)
from dualad._shapes import dtype_of, is_complex, raw, shape_of, zeros
from dualad._tree import flatten, leaf_paths
from dualad.extend import transform_level
from reverse._backward import check_cotangent, run_backward
from reverse._tensor import Tensor

__all__ = ["vjp", "grad", "value_and_grad", "jacrev"]


def _unwrap(out: Any, level: int, who: str):
    """Output leaves as (value, ref or None)."""
    leaves, build = flatten(out)
    check_output_leaves(leaves, out, who)
    values, refs = [], []
    for leaf in leaves:
        if isinstance(leaf, Tensor) and leaf._level == level:
            values.append(leaf.value)
            refs.append(None if not leaf.requires_grad else
                        (leaf, 0) if leaf._node is None else (leaf._node, leaf._index))
        else:
            values.append(leaf)
            refs.append(None)
    return build(values), refs


def _as_input_cotangent(g, primal):
    """The cotangent in the input's own form: a float for a float, else an array."""
    if g is None:
        return 0.0 if type(primal) is float else zeros(primal)
    if type(primal) is float:
        return float(g) if type(g) is not float and not hasattr(g, "_strip") else g
    if type(g) in (float, int) or (hasattr(g, "dtype") and not hasattr(g, "shape")):
        return zeros(primal) + g
    if isinstance(g, np.generic):  # NumPy reductions return scalars for 0-d results
        return np.asarray(g, dtype=primal.dtype)
    return g


def vjp(f: Callable, *primals: Any, has_aux: bool = False):
    """``f(*primals)`` and a function mapping an output cotangent to input cotangents.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import vjp
    >>> out, f_vjp = vjp(lambda x: x * 2.0, np.array([1.0, 2.0]))
    >>> f_vjp(np.array([1.0, 10.0]))
    (array([ 2., 20.]),)
    """
    return _vjp(f, primals, has_aux, "vjp")


def _vjp(f: Callable, primals: tuple, has_aux: bool, who: str, check_out: Callable | None = None,
         unused_as_zeros: bool = True):
    """:func:`vjp`, with errors about ``f`` in the name of the transform ``who``;
    ``check_out(out)``, if given, checks the output first (grad's scalar test).
    With ``unused_as_zeros=False`` the pullback gives ``None`` for an input the
    output does not depend on (``checkpoint``'s closed-over Tensors that the
    block does not use keep ``.grad`` None, as in PyTorch)."""
    leaves, build = flatten(primals)
    names = leaf_paths(primals, "primals")
    for leaf, name in zip(leaves, names):
        check_differentiable(leaf, name)
    run = transform_level()
    with run as level:
        inputs = [Tensor._make(float(x) if isinstance(x, int) else x, level, requires_grad=True)
                  for x in leaves]
        result = f(*build(inputs))
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise TypeError(f"{who}: has_aux=True: f must return a pair (output, aux), "
                                f"got {describe(result)}")
            result, aux = result
            aux = _unwrap_aux(aux, level)
        if check_out is not None:
            check_out(result)
        out, refs = _unwrap(result, level, who)
    out_leaves = flatten(out)[0]

    def f_vjp(cotangent):
        ct_leaves, _ = flatten(cotangent)
        if len(ct_leaves) != len(out_leaves):
            raise ValueError(f"cotangent has {len(ct_leaves)} leaves; the output has {len(out_leaves)}")
        paths = leaf_paths(out)
        roots, cts = [], []
        for i, (ref, ct, o) in enumerate(zip(refs, ct_leaves, out_leaves)):
            check_cotangent(ct, o, f"vjp: cotangent{paths[i]}")
            if shape_of(ct) != shape_of(o):
                raise ValueError(f"cotangent leaf {i} has shape {shape_of(ct)}; the output has {shape_of(o)}")
            if ref is not None:
                roots.append(ref)
                cts.append(ct)
        capture = {(id(t), 0): None for t in inputs}
        if roots:
            with run:  # reopened: the walk works on the tape this call recorded
                run_backward(roots, cts, retain_graph=True, create_graph=False,
                             capture=capture, accumulate=False, level=level)
        grads = [None if g is None and not unused_as_zeros else _as_input_cotangent(g, x)
                 for g, x in zip([capture[(id(t), 0)] for t in inputs], leaves)]
        return build(grads)

    if has_aux:
        return out, f_vjp, aux
    return out, f_vjp


def _unwrap_aux(aux: Any, level: int) -> Any:
    """``aux`` with this level's Tensors replaced by their values; anything else kept."""
    leaves, build = flatten(aux)
    return build([leaf.value if isinstance(leaf, Tensor) and leaf._level == level else leaf
                  for leaf in leaves])


def value_and_grad(f: Callable, argnums: int | tuple = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable:
    """A function returning ``(f(*args), grad)``; ``f`` must return a real scalar.

    With complex inputs the gradient is JAX's, ``df/dx - i df/dy`` (the conjugate of
    PyTorch's ``.grad``). ``holomorphic=True``, for a holomorphic ``f`` of complex
    inputs with a complex output, gives the complex derivative ``f'(z)``, as JAX does.

    Examples
    --------
    >>> from reverse import value_and_grad
    >>> value_and_grad(lambda x, y: x * y + x ** 2, argnums=(0, 1))(2.0, 3.0)
    (10.0, (7.0, 2.0))
    """
    single, requested = _argnums_tuple(argnums)

    def wrapper(*args):
        nums = _positions(argnums, requested, len(args))

        def partial_f(*diff_args):
            full = list(args)
            for n, a in zip(nums, diff_args):
                full[n] = a
            return f(*full)

        if holomorphic:
            for n in nums:
                if not is_complex(args[n]):
                    raise TypeError(f"grad(holomorphic=True) needs complex inputs; argument {n} has "
                                    f"dtype {dtype_of(raw(args[n]))}")
        res = _vjp(partial_f, tuple([args[n] for n in nums]), has_aux, "grad", _check_grad_output)
        out, f_vjp = res[0], res[1]
        if is_complex(out) != holomorphic:
            raise TypeError("grad requires a real-valued output (take its real part or abs), or, for a "
                            "holomorphic f of complex inputs, holomorphic=True" if not holomorphic else
                            "grad(holomorphic=True) needs a complex output")
        one = 1.0 if type(raw(out)) is float else zeros(raw(out)) + 1
        g = f_vjp(one)
        g = g[0] if single else g
        return ((out, res[2]), g) if has_aux else (out, g)
    return wrapper


def _argnums_tuple(argnums) -> tuple[bool, tuple[int, ...]]:
    """Whether ``argnums`` is a single index, and its indices as a tuple of ints
    (checked when the transform is made, as JAX does)."""
    single = not isinstance(argnums, (tuple, list))
    nums = (argnums,) if single else tuple(argnums)
    for n in nums:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r} "
                            f"(an entry of type {type(n).__name__})")
    return single, tuple(int(n) for n in nums)


def _positions(argnums, nums: tuple[int, ...], n_args: int) -> tuple[int, ...]:
    """``nums`` as non-negative positions among ``n_args`` arguments, each at most
    once: a repeated argument would be wrapped twice, and the gradient of all
    but the last wrapping would be silently zero."""
    seen: dict[int, int] = {}
    for n in nums:
        if not -n_args <= n < n_args:
            raise ValueError(f"argnums={argnums!r} is out of range for {n_args} arguments: "
                             f"{n} is not in [{-n_args}, {n_args})")
        position = n % n_args
        if position in seen:
            spelled = f" (as {seen[position]} and {n})" if seen[position] != n else ""
            raise ValueError(f"argnums={argnums!r} repeats argument {position}{spelled}; "
                             "list each argument once")
        seen[position] = n
    return tuple(seen)


def _check_one_output(out: Any) -> None:
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(f"jacrev: f must return one array or float, got {describe(out)}; "
                        "take the Jacobian of each output separately")


def _check_grad_output(out: Any) -> None:
    hint = "; use vjp or jacrev for other outputs"
    check_scalar_output(out, "grad", hint)
    r = raw(out)
    if isinstance(r, (int, bool)) or not (isinstance(r, float) or getattr(r.dtype, "kind", "f") in "fc"):
        raise TypeError(f"grad: f must return a float scalar, got {describe(out)}{hint}")


def grad(f: Callable, argnums: int | tuple = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable:
    """The gradient of a real scalar function, by one reverse pass (complex
    inputs and ``holomorphic`` as in :func:`value_and_grad`).

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import grad
    >>> grad(lambda x: (x ** 2).sum())(np.array([2.0, 3.0]))
    array([4., 6.])
    """
    vg = value_and_grad(f, argnums, has_aux, holomorphic)

    def wrapper(*args):
        (out, g) = vg(*args)
        return (g, out[1]) if has_aux else g
    return wrapper


def jacrev(f: Callable) -> Callable:
    """The Jacobian of ``f`` at an array ``x``: one reverse pass per output entry.

    Shape ``out.shape + x.shape``.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import jacrev
    >>> jacrev(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    def jac(x):
        check_differentiable(x, "jacrev: x")
        out, f_vjp = _vjp(f, (x,), False, "jacrev", _check_one_output)
        shape = shape_of(out)
        n = math.prod(shape)
        rows = []
        for i in range(n):
            basis = zeros(out, (n,))
            basis = ops.index_add(basis, 1.0 + zeros(out, ()), (i,)) if n else basis
            rows.append(f_vjp(ops.reshape(basis, shape))[0])
        if not rows:
            return zeros(out, shape + shape_of(x))
        return ops.reshape(ops.stack(rows), shape + shape_of(x))
    return jac
