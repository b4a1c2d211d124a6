"""JAX-style transforms over arrays, floats and pytrees: ``vjp``, ``grad``,
``value_and_grad``, ``jacrev``, and ``jacobian``, which picks forward or reverse
mode. Each call opens its own level, so they nest with each other and with ``dualad``'s forward transforms."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dualad import jacfwd, ops, vmap
from dualad.extend import transform_level
from dualad.interpreter import (
    Selection,
    Value,
    basis_chunks,
    blocks,
    check_argnums,
    check_callable,
    check_inputs,
    check_output_leaves,
    check_points,
    check_scalar_output,
    chunk_of,
    describe,
    dtype_of,
    flatten,
    is_complex,
    leaf_paths,
    match_chunks,
    paired_leaves,
    raw,
    shape_of,
    zeros,
)
from reverse._backward import check_cotangent, run_backward
from reverse._tensor import NUMPY_LEVELS, Tensor

__all__ = ["vjp", "grad", "value_and_grad", "jacrev", "jacobian"]


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
    """The cotangent in the input's own form: a float for a float, a complex for a
    complex, else an array (with the input's chunks, for a Dask array)."""
    if type(primal) is complex:  # a value type (forward over reverse) keeps its derivative
        return 0j if g is None else complex(g) if type(g) is not complex and not isinstance(g, Value) else g
    if type(primal) is float:
        return 0.0 if g is None else float(g) if type(g) is not float and not isinstance(g, Value) else g
    if g is None:
        g = zeros(primal)
    elif type(g) in (float, int) or (hasattr(g, "dtype") and not hasattr(g, "shape")):
        g = zeros(primal) + g  # a NumPy scalar where primal is 0-d: made an array below
    if isinstance(g, np.generic):  # NumPy reductions return scalars for 0-d results
        return np.asarray(g, dtype=primal.dtype)
    return match_chunks(g, primal)


def vjp(f: Callable, *primals: Any, has_aux: bool = False):
    """``f(*primals)`` and a function mapping an output cotangent to input cotangents.

    ``f`` runs once, recording a tape; each call of the returned function walks it
    back (so one recording serves many cotangents, e.g. the rows of a Jacobian).

    Parameters
    ----------
    f : callable
        The function, called as ``f(*primals)``. It returns a float, an array, or
        a pytree (tuple, list, dict) of them.
    *primals : float, array, or pytree of them
        The point. Every leaf must be floating point (or complex); an ``int``
        is refused, as an integer array is (write ``3.0``, not ``3``).
    has_aux : bool, optional
        ``f`` returns a pair ``(output, aux)``: only ``output`` is differentiated,
        and ``aux`` is returned as it is (its Tensors of this call as their values).

    Returns
    -------
    out
        ``f(*primals)`` (without its derivative).
    f_vjp : callable
        ``f_vjp(cotangent)``, where ``cotangent`` has the structure, shapes and
        dtypes of ``out``, returns a tuple with one cotangent per primal, each of
        the primal's structure: the vector-Jacobian product ``cotangent^T J``
        (for complex values, JAX's convention: see the complex-number guide).
        An input that ``out`` does not depend on gets zeros.
    aux
        Only with ``has_aux=True``: the second item ``f`` returned.

    Raises
    ------
    TypeError
        A primal that is not floating point, an output that is not a float, an
        array or a pytree of them, or (``has_aux=True``) an output that is not a
        pair. ``f_vjp`` raises ``TypeError`` or ``ValueError`` for a cotangent
        whose structure, dtype or shape differs from the output's.

    See Also
    --------
    grad, jacrev, dualad.jvp

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import vjp
    >>> out, f_vjp = vjp(lambda x: x * 2.0, np.array([1.0, 2.0]))
    >>> f_vjp(np.array([1.0, 10.0]))
    (array([ 2., 20.]),)

    Two primals give two cotangents; ``has_aux`` passes a second result through:

    >>> out, f_vjp, aux = vjp(lambda x, y: (x * y, "aux"), np.array([1.0, 2.0]),
    ...                       np.array([3.0, 4.0]), has_aux=True)
    >>> out, aux
    (array([3., 8.]), 'aux')
    >>> f_vjp(np.ones(2))
    (array([3., 4.]), array([1., 2.]))
    """
    check_callable(f, "vjp")
    return _vjp(f, primals, has_aux, "vjp")


def _vjp(f: Callable, primals: tuple, has_aux: bool, who: str, check_out: Callable | None = None,
         unused_as_zeros: bool = True):
    """:func:`vjp`, with errors about ``f`` in the name of the transform ``who``;
    ``check_out(out)``, if given, checks the output first (grad's scalar test).
    With ``unused_as_zeros=False`` the pullback gives ``None`` for an input the
    output does not depend on (``checkpoint``'s closed-over Tensors that the
    block does not use keep ``.grad`` None, as in PyTorch). The values passed
    into ``f`` speak NumPy (:class:`reverse._tensor.NumpyTensor`)."""
    leaves, build = flatten(primals)
    check_points(leaves, primals, "primals")
    run = transform_level()
    with run as level:
        NUMPY_LEVELS.add(level)
        try:
            inputs = [Tensor._make(x, level, requires_grad=True) for x in leaves]
            result = f(*build(inputs))
        finally:
            NUMPY_LEVELS.discard(level)
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
        ct_leaves = paired_leaves(out, cotangent, "the output", "cotangent", "vjp")[1]
        paths = None  # made for a message only
        roots, cts = [], []
        for i, (ref, ct, o) in enumerate(zip(refs, ct_leaves, out_leaves)):
            if not _plain_cotangent(ct, o):
                paths = leaf_paths(out) if paths is None else paths
                check_cotangent(ct, o, f"vjp: cotangent{paths[i]}")
                if shape_of(ct) != shape_of(o):
                    raise ValueError(f"cotangent leaf {i} has shape {shape_of(ct)}; the output has "
                                     f"{shape_of(o)}")
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


def _plain_cotangent(ct: Any, out: Any) -> bool:
    """Whether ``ct`` passes ``check_cotangent`` for ``out`` by its type alone: a real
    float, or a NumPy array of ``out``'s shape, real where ``out`` is."""
    if type(ct) is np.ndarray and type(out) is np.ndarray:
        return ct.shape == out.shape and (ct.dtype.kind == "f" or ct.dtype.kind == out.dtype.kind == "c")
    return type(ct) is float and type(out) is float


def _unwrap_aux(aux: Any, level: int) -> Any:
    """``aux`` with this level's Tensors replaced by their values; anything else kept."""
    leaves, build = flatten(aux)
    return build([leaf.value if isinstance(leaf, Tensor) and leaf._level == level else leaf
                  for leaf in leaves])


def value_and_grad(f: Callable, argnums: int | tuple = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable:
    """A function returning ``(f(*args), grad)``; ``f`` must return a real scalar.

    One call runs ``f`` once, recording a tape, and walks it back once: the value
    comes with the gradient at no extra cost.

    Parameters
    ----------
    f : callable
        The function to differentiate. It returns a real scalar (a float or a
        0-d floating array), or with ``has_aux=True`` a pair ``(scalar, aux)``.
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate (default 0). With a tuple the
        gradient is a tuple, one entry per argument named. Each argument may be a
        float, an array, or a pytree (tuple, list, dict) of them; its gradient has
        the same structure, shapes and dtypes.
    has_aux : bool, optional
        ``f`` returns ``(output, aux)``; the result is then
        ``((output, aux), gradient)``, and ``aux`` is not differentiated.
    holomorphic : bool, optional
        For a holomorphic ``f`` of complex inputs with a complex output: the
        gradient is the complex derivative ``f'(z)``, as in JAX. Without it, with
        complex inputs the gradient is JAX's ``df/dx - i df/dy`` (the conjugate
        of PyTorch's ``.grad``).

    Returns
    -------
    callable
        ``value_and_grad(f)(*args)`` returns ``(f(*args), gradient)``, or
        ``((output, aux), gradient)`` with ``has_aux=True``.

    Raises
    ------
    TypeError
        When called: ``f`` returns something other than a real floating scalar
        (use :func:`vjp` or :func:`jacrev` for other outputs), a differentiated
        argument is not floating point, or ``holomorphic=True`` meets a real
        input or a real output. ``argnums`` that is not an int or a tuple of
        ints raises at once.
    ValueError
        ``argnums`` is an empty tuple (at once), or, when called, out of range or
        repeats an argument.

    See Also
    --------
    grad, vjp, mixed.hvp

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import value_and_grad
    >>> value_and_grad(lambda x, y: x * y + x ** 2, argnums=(0, 1))(2.0, 3.0)
    (10.0, (7.0, 2.0))
    >>> (loss, n), g = value_and_grad(lambda w: ((w ** 2).sum(), w.size),
    ...                               has_aux=True)(np.array([1.0, 2.0]))
    >>> float(loss), n, g
    (5.0, 2, array([2., 4.]))
    """
    return _value_and_grad(f, argnums, has_aux, holomorphic, "value_and_grad")


def _value_and_grad(f: Callable, argnums: int | tuple, has_aux: bool, holomorphic: bool,
                    who: str) -> Callable:
    """:func:`value_and_grad`, with errors in the name of the transform ``who``."""
    check_callable(f, who)
    single, requested = check_argnums(argnums)

    def check_output(out: Any) -> None:
        _check_grad_output(out, who)

    def wrapper(*args):
        sel = Selection(f, args, argnums, single, requested)
        check_inputs(sel.x, who)
        if holomorphic:
            for n in sel.where:
                if not is_complex(args[n]):
                    raise TypeError(f"{who}(holomorphic=True) needs complex inputs; argument {n} has "
                                    f"dtype {dtype_of(raw(args[n]))}")
        res = _vjp(sel.f_of_x, (sel.x,), has_aux, who, check_output)
        out, f_vjp = res[0], res[1]
        if is_complex(out) != holomorphic:
            raise TypeError(f"{who} requires a real-valued output (take its real part or abs), or, for a "
                            "holomorphic f of complex inputs, holomorphic=True" if not holomorphic else
                            f"{who}(holomorphic=True) needs a complex output")
        one = 1.0 if type(raw(out)) is float else zeros(out) + 1  # raw(out) may be batched (vmap)
        (g,) = f_vjp(one)
        return ((out, res[2]), g) if has_aux else (out, g)
    return wrapper


def _check_grad_output(out: Any, who: str) -> None:
    """``out`` is a floating scalar (a one-element array of any shape, as PyTorch's
    ``backward()`` takes it); errors name the transform ``who``."""
    hint = "; use vjp or jacrev for other outputs"
    check_scalar_output(out, who, hint)
    r = raw(out)
    if isinstance(r, (int, bool)) or not (
            isinstance(r, (float, complex)) or getattr(r.dtype, "kind", "f") in "fc"):
        raise TypeError(f"{who}: f must return a float scalar, got {describe(out)}{hint}")


def grad(f: Callable, argnums: int | tuple = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable:
    """The gradient of a real scalar function, by one reverse pass.

    Parameters
    ----------
    f : callable
        The function to differentiate. It returns a real scalar (a float or a
        0-d floating array), or with ``has_aux=True`` a pair ``(scalar, aux)``.
        It may be any Python: loops and branches are recorded as they run.
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate (default 0). With a tuple the
        result is a tuple of gradients, one per argument named. Each argument may
        be a float, an array, or a pytree (tuple, list, dict) of them; its
        gradient has the same structure, shapes and dtypes.
    has_aux : bool, optional
        ``f`` returns ``(output, aux)``; the result is then ``(gradient, aux)``.
    holomorphic : bool, optional
        For a holomorphic ``f`` of complex inputs with a complex output: the
        complex derivative ``f'(z)``. Complex inputs without it: see
        :func:`value_and_grad`.

    Returns
    -------
    callable
        ``grad(f)(*args)`` returns the gradient of ``f`` at ``args`` with respect
        to the arguments ``argnums`` (with ``has_aux=True``, ``(gradient, aux)``).

    Raises
    ------
    TypeError
        When called: ``f`` returns something other than a real floating scalar
        (use :func:`vjp` or :func:`jacrev` for other outputs), or a differentiated
        argument is not floating point; see :func:`value_and_grad` for the rest.
    ValueError
        ``argnums`` is an empty tuple (at once), or, when called, out of range or
        repeats an argument.

    See Also
    --------
    value_and_grad, vjp, jacrev, dualad.derivative

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import grad
    >>> grad(lambda x: (x ** 2).sum())(np.array([2.0, 3.0]))
    array([4., 6.])
    >>> grad(lambda x, y: x * y, argnums=1)(2.0, 3.0)
    2.0
    >>> grad(lambda p: p["a"] * p["b"])({"a": 2.0, "b": 5.0})
    {'a': 5.0, 'b': 2.0}
    >>> grad(lambda x: ((x ** 2).sum(), "aux"), has_aux=True)(np.array([1.0, 2.0]))
    (array([2., 4.]), 'aux')
    """
    vg = _value_and_grad(f, argnums, has_aux, holomorphic, "grad")

    def wrapper(*args):
        (out, g) = vg(*args)
        return (g, out[1]) if has_aux else g
    return wrapper


def jacrev(f: Callable, argnums: int | tuple = 0, has_aux: bool = False, *,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``f`` with respect to the arguments ``argnums``, by reverse mode.

    ``f`` runs once, recording a tape, and the tape is walked back with a
    batch of ``chunk_size`` output cotangents at once (by default all the
    output's entries: one walk), as ``jax.jacrev`` is ``vmap`` of ``vjp``;
    so the Jacobian of an m-output function costs ceil(m / chunk_size)
    walks, not m. For an output leaf of shape ``o`` and an input leaf of
    shape ``i`` the block has shape ``o + i``; pytrees nest as in JAX (and
    as :func:`dualad.jacfwd` gives): the output's structure, holding at each
    leaf the structure of the inputs.

    Parameters
    ----------
    f : callable
        The function, returning a float, an array, or a pytree (tuple, list,
        dict) of them.
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate (default 0). With a tuple
        each output leaf holds a tuple of blocks, one per argument named.
    has_aux : bool, optional
        ``f`` returns ``(output, aux)``; the result is then ``(jacobian, aux)``.
    chunk_size : int, optional
        How many output entries one walk of the tape carries (>= 1; default
        all of them). A walk holds ``chunk_size`` cotangents of every
        recorded value at once: a smaller chunk bounds that memory.

    Returns
    -------
    callable
        ``jacrev(f)(*args)`` returns the Jacobian at ``args`` (with
        ``has_aux=True``, ``(jacobian, aux)``).

    Raises
    ------
    TypeError
        When called: a differentiated argument is not floating point, or ``f``
        returns something other than floats, arrays or pytrees of them.
        ``chunk_size`` that is not an int, when called.
    ValueError
        ``argnums`` is an empty tuple (at once), or, when called, out of range or
        repeats an argument, or ``chunk_size`` is below 1.

    See Also
    --------
    dualad.jacfwd : the same Jacobian by forward mode, cheaper for few inputs.
    jacobian : the one of the two that the sizes favour.

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import jacrev
    >>> jacrev(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    >>> jacrev(lambda w, b: {"y": w * b}, argnums=(0, 1))(np.array([1.0, 2.0]), 3.0)["y"][1]
    array([1., 2.])
    >>> jacrev(lambda x: (x ** 2, "aux"), has_aux=True)(np.array([3.0]))
    (array([[6.]]), 'aux')
    >>> jacrev(lambda x: x[::-1] * 2.0, chunk_size=1)(np.array([1.0, 2.0]))
    array([[0., 2.],
           [2., 0.]])
    """
    check_callable(f, "jacrev")
    single, nums = check_argnums(argnums)

    def jac(*args):
        sel = Selection(f, args, argnums, single, nums)
        check_inputs(sel.x, "jacrev")
        return _pulled_back(_vjp(sel.f_of_x, (sel.x,), has_aux, "jacrev"), sel.x, has_aux, chunk_size)
    return jac


def _pulled_back(res: tuple, x: Any, has_aux: bool, chunk_size: int | None) -> Any:
    """The Jacobian from ``res``, what :func:`_vjp` returned for ``f`` at ``x``: the
    pullback of each chunk of the output's basis at once, under ``vmap``."""
    out, f_vjp = res[0], res[1]
    x_leaves, x_build = flatten(x)
    out_leaves, out_build = flatten(out)
    sizes = [math.prod(shape_of(leaf)) for leaf in out_leaves]
    rows = []  # per chunk of k output entries: (k, N input entries)
    for cotangents in basis_chunks(out_leaves, chunk_of(sum(sizes), chunk_size)):
        k = shape_of(cotangents[0])[0]
        (g,) = vmap(f_vjp)(out_build(cotangents))
        per_leaf = [ops.reshape(_as_array(gm, xm), (k, -1)) for gm, xm in zip(flatten(g)[0], x_leaves)]
        rows.append(per_leaf[0] if len(per_leaf) == 1 else ops.concatenate(per_leaf, axis=1))
    every = rows[0] if len(rows) == 1 else ops.concatenate(rows, axis=0) if rows else None
    result, start = [], 0
    for leaf, n in zip(out_leaves, sizes):
        if not n or every is None:
            result.append(x_build([zeros(leaf, shape_of(leaf) + shape_of(xm)) for xm in x_leaves]))
            continue
        flat = ops.getitem(every, (slice(start, start + n),)) if len(out_leaves) > 1 else every
        start += n
        # (N,) + the output's shape, as blocks() takes it
        flat = ops.reshape(ops.moveaxis(flat, 0, -1), shape_of(flat)[1:2] + shape_of(leaf))
        result.append(x_build(blocks(flat, leaf, x_leaves)))
    jacobian = out_build(result)
    return (jacobian, res[2]) if has_aux else jacobian


def jacobian(f: Callable, argnums: int | tuple = 0, has_aux: bool = False, *,
             chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``f``, by reverse mode or forward mode, whichever the sizes favour.

    ``f`` runs once under reverse mode's tape; where its output has no more
    entries than the differentiated arguments, the tape gives the Jacobian
    (:func:`jacrev`: ceil(m / chunk_size) walks for m outputs); otherwise
    :func:`dualad.jacfwd` computes it (ceil(n / chunk_size) forward passes
    for n inputs), running ``f`` once more. ``jax.jacobian`` is always
    ``jacrev`` and ``torch.autograd.functional.jacobian`` reverse mode by
    default; the result is the same Jacobian either way, in the same layout.

    Parameters
    ----------
    f : callable
        The function, returning a float, an array, or a pytree (tuple, list,
        dict) of them.
    argnums : int or tuple of int, optional
        Which positional arguments to differentiate (default 0).
    has_aux : bool, optional
        ``f`` returns ``(output, aux)``; the result is then ``(jacobian, aux)``
        (in forward mode, ``aux`` of the second run of ``f``).
    chunk_size : int, optional
        The ``chunk_size`` of :func:`jacrev` or of :func:`dualad.jacfwd`,
        whichever runs (>= 1; default all entries at once).

    Returns
    -------
    callable
        ``jacobian(f)(*args)``, laid out as :func:`jacrev` and
        :func:`dualad.jacfwd` lay it out.

    Raises
    ------
    TypeError, ValueError
        As :func:`jacrev` raises them.

    See Also
    --------
    jacrev, dualad.jacfwd

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import jacobian
    >>> jacobian(lambda x: np.stack([x @ x, x.sum()]))(np.array([1.0, 2.0, 3.0]))  # reverse mode
    array([[2., 4., 6.],
           [1., 1., 1.]])
    >>> jacobian(lambda t: np.stack([t, t ** 2, t ** 3]))(2.0)  # forward mode
    array([ 1.,  4., 12.])
    """
    check_callable(f, "jacobian")
    single, nums = check_argnums(argnums)
    forward = jacfwd(f, argnums, has_aux, chunk_size=chunk_size)

    def jac(*args):
        sel = Selection(f, args, argnums, single, nums)
        n_in = sum(math.prod(shape_of(leaf)) for leaf in check_inputs(sel.x, "jacobian"))
        res = _vjp(sel.f_of_x, (sel.x,), has_aux, "jacobian")
        n_out = sum(math.prod(shape_of(leaf)) for leaf in flatten(res[0])[0])
        return _pulled_back(res, sel.x, has_aux, chunk_size) if n_out <= n_in else forward(*args)
    return jac


def _as_array(g: Any, like: Any) -> Any:
    """A gradient row as an array (a float input's is a float)."""
    return np.asarray(g) if type(like) is float else g
