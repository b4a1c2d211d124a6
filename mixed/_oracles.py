"""The oracles of the Newton solvers: what their steps ask of f at a point, that
is f, its gradient and H (as something with ``matvec``), on the backend of ``x0``.

:class:`_OnTheBackend` serves NumPy, CuPy and Dask: the gradient comes from a
reverse pass, and H v from the tangent half of a forward-over-reverse program
traced once per iterate (:func:`mixed.linearize`, on NumPy) or from one
forward-over-reverse pass each. Iterates and gradients are persisted as they
are made, and the scalars a decision needs (f, norms, slopes) are read
together, as in ``mixed._krylov``.

A Dask ``x0`` of one chunk and at most :data:`FORMED_AT_MOST` entries (a model
of few parameters fit to data on a cluster) is the exception: every read of a
scalar is then a round trip to the cluster, dearer than the products
themselves, so the solve runs on the client and each point costs one
computation, which returns f, the gradient and H (see :class:`_Formed`).
:func:`_oracle` chooses between the two.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import array_api_compat

import dualad
import reverse
from dualad.interpreter import fresh_keys, persist, traceable
from mixed._hvp import hessian as _hessian
from mixed._hvp import hvp as _hvp
from mixed._linearize import linearize as _linearize
from mixed._result import OptimizeResult


def _on_dask(fn: Callable) -> Callable:
    """``fn``, compiled for Dask arrays: a call then builds one task per chunk of the
    data (see :func:`dualad.compile`) instead of a graph of tasks per primitive, which
    cost more than computing them. Where ``fn`` does not split so, compile runs it as
    before, eagerly; its warning is compile's, not the solver's."""
    compiled = dualad.compile(fn)

    def call(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r"dualad\.compile\(", RuntimeWarning)
            return compiled(*args)
    return call


#: A Dask ``x0`` of one chunk and at most this many entries is solved on the client,
#: with H formed at each point (see :class:`_Formed`).
FORMED_AT_MOST = 64
#: H's directions batched in one pass over a chunk: each intermediate of a pass holds this
#: many values per row, for a little more time than one pass of all (benchmarks/README.md).
DIRECTIONS_PER_PASS = 16


def _oracle(f: Callable, x: Any, linearize: bool) -> "_OnTheBackend | _Formed":
    """What the steps ask of ``f``, for a solve from ``x``."""
    if (array_api_compat.is_dask_array(x) and x.shape[0] <= FORMED_AT_MOST
            and len(x.chunks[0]) == 1):
        return _Formed(f, x)
    return _OnTheBackend(f, x, linearize)


class _OnTheBackend:
    """f, its gradient and H at points of ``x0``'s backend. ``at(x)`` gives ``(x, f(x),
    grad f(x))``, persisted (on Dask: computed and kept, so that reading f and the
    gradient's norms later does not run f again; f(x) is a scalar of the backend,
    read by the caller with what else it needs). ``hessian(x)`` gives H at ``x`` as
    something with ``matvec``: on NumPy with ``linearize``, the operator of
    :func:`mixed.linearize` (from the last one's trace); else one forward-over-reverse
    pass per product (compiled once per solve on Dask)."""

    def __init__(self, f: Callable, x: Any, linearize: bool):
        self.f, self.linearize = f, linearize and traceable(x)
        vg, products = reverse.value_and_grad(f), lambda x, d: _hvp(f, x, d)
        if array_api_compat.is_dask_array(x):
            vg, products = _on_dask(vg), _on_dask(products)
        self.vg, self.products = vg, products
        self.last = None  # the operator of linearize at the last iterate

    def start(self, x0: Any) -> Any:
        """``x0``; on Dask with keys of its own, and so every array of the solve
        (see ``fresh_keys``)."""
        return fresh_keys(x0)

    def at(self, x: Any) -> tuple:
        value, g = self.vg(x)
        return persist(x, value, g)

    def hessian(self, x: Any) -> Any:
        if not self.linearize:
            return _PerProduct(self.products, x)
        self.last = self.last.at(x)[1] if self.last is not None else _linearize(self.f, x)[1]
        return self.last

    def given(self, result: OptimizeResult) -> OptimizeResult:
        return result


class _PerProduct:
    """H at ``x`` by one forward-over-reverse pass per product, ``products(x, d)``."""

    def __init__(self, products: Callable, x: Any):
        self.products, self.x = products, x

    def matvec(self, d: Any) -> Any:
        return self.products(self.x, d)


class _Formed:
    """f at points of a Dask ``x0`` of one chunk and at most :data:`FORMED_AT_MOST`
    entries: the solve runs on the client, on NumPy copies of the iterates, and each
    point is one computation on the cluster, compiled to one task per chunk of the
    data, that returns f, its gradient and H (the n directions' H-products batched,
    :data:`DIRECTIONS_PER_PASS` to a pass over each chunk: :func:`mixed.hessian`). CG
    then takes its products
    from that matrix, so a Newton step whose first trial point is accepted costs
    one round trip to the cluster instead of one per H-product and per read. The
    results, and what the callback sees, are Dask arrays of ``x0``'s chunks."""

    def __init__(self, f: Callable, x0: Any):
        self.chunks = x0.chunks
        hessian = _hessian(f, chunk_size=DIRECTIONS_PER_PASS)
        self.evaluate = _on_dask(lambda x: (*reverse.value_and_grad(f)(x), hessian(x)))
        self.last = None  # (x, H) of the last point

    def start(self, x0: Any) -> Any:
        """``x0`` on the client, as NumPy."""
        return x0.compute()

    def at(self, x: Any) -> tuple:
        import dask
        import dask.array as da
        value, g, h = dask.compute(*self.evaluate(da.from_array(x, chunks=-1)))
        self.last = x, h
        return x, value, g

    def hessian(self, x: Any) -> Any:
        if self.last is None or self.last[0] is not x:  # not the last point evaluated
            self.at(x)
        return _Matrix(self.last[1])

    def given(self, result: OptimizeResult) -> OptimizeResult:
        import dask.array as da
        return dataclasses.replace(result, x=da.from_array(result.x, chunks=self.chunks),
                                   jac=da.from_array(result.jac, chunks=self.chunks))


class _Matrix:
    """H as a matrix in memory."""

    def __init__(self, h: Any):
        self.h = h

    def matvec(self, d: Any) -> Any:
        return self.h @ d
