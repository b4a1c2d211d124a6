"""``einsum``: its entry, rules and the parser of its subscripts."""

from __future__ import annotations

import math
import string
from collections import Counter
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from dualad._base.core import bind
from dualad._base.shapes import shape_of
from dualad._primitives import shape as _shape
from dualad._primitives.linalg.common import _add, _batched, constant_like, eye_like
from dualad._table.entries import custom

__all__ = ["einsum"]


# -- einsum ---------------------------------------------------------------------------------
def _einsum_impl(xp, *operands, subscripts):
    fn = getattr(xp, "einsum", None)
    if fn is None:
        name = getattr(xp, "__name__", type(xp).__name__)
        raise NotImplementedError(
            f"einsum: the array namespace {name!r} has no einsum function (it is not part of "
            "the array API standard); use NumPy or CuPy arrays, or write the contraction "
            "with matmul, tensordot, sum and broadcasting")
    if len(operands) == 2 and type(operands[0]) is np.ndarray and type(operands[1]) is np.ndarray \
            and operands[0].dtype.kind in "fc" and operands[1].dtype.kind in "fc" \
            and _pays_to_plan(subscripts, (operands[0].shape, operands[1].shape)):
        plan = _matmul_plan(subscripts, operands[0].shape, operands[1].shape)
        if plan is not None:
            return _by_matmul(plan, *operands)
    if len(operands) > 2 or _pays_to_plan(subscripts, tuple(map(shape_of, operands))):
        # Without a contraction order, three or more operands run as one nested
        # loop over every letter (the VJP's identity and ones operands included).
        try:
            return fn(subscripts, *operands, optimize=True)
        except TypeError:  # an einsum without the keyword
            pass
    return fn(subscripts, *operands)


# Two operands: einsum's one loop over every letter costs about 17 ns a product where
# its output is an array (GMM's "ijk,mik->mij": 350 us for 20,000), where the products
# that optimize=True gives to BLAS cost 28 us with its 10 us of planning; sums of
# products to one number, and small ones, stay cheaper unplanned (2 us).
_PLANNED_PRODUCTS, _PLANNED_OUTPUT = 1024, 16


@lru_cache(maxsize=1024)
def _pays_to_plan(subscripts, shapes):
    """Whether a two-operand einsum of operands of ``shapes`` makes enough products into a
    large enough output that planning it (``optimize=True``) pays."""
    if "..." in subscripts or "->" not in subscripts:
        return False
    ins, out = _split_subscripts(subscripts)
    sizes = {}
    for letters, shape in zip(ins, shapes):
        for letter, size in zip(letters, shape):
            sizes[letter] = size
    products = math.prod(sizes.values())
    return products >= _PLANNED_PRODUCTS and math.prod(sizes.get(c, 1) for c in out) >= _PLANNED_OUTPUT


@lru_cache(maxsize=1024)
def _matmul_plan(subscripts, shape_a, shape_b):
    """How a two-operand contraction runs as one batched ``matmul``: ``(swap, plan of the
    left operand, plan of the right, the product's shape, its axes to the output's, whether
    the output's letters are the left operand's kept ones, then the batch's, then the
    right's)``, each operand's axes permuted to (batch, kept, contracted) on the left,
    (batch, contracted, kept) on the right, and flattened to three; None where a letter
    repeats within a term, is summed within one operand, or has two sizes (NumPy's einsum
    takes those).

    The larger operand goes where its last (contiguous) axis stays last, so that the
    product reads it in place: GMM's ``"ijk,mik->mij"`` (25 components of 10 x 10, 10,000
    points) takes 3.4 ms so, 7.8 ms the other way round. NumPy's ``einsum(optimize=True)``
    contracts as these do after planning, which costs about 10 us on each call (GMM's three
    contractions at 5 components of 2 x 2 and 1,000 points: 17-28 us each, 8-10 us here)."""
    (ta, tb), out = _split_subscripts(subscripts)
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb):
        return None
    size = dict(zip(ta, shape_a))
    if any(size.setdefault(c, n) != n for c, n in zip(tb, shape_b)):
        return None
    batch = [c for c in out if c in ta and c in tb]
    contracted = [c for c in ta if c in tb and c not in out]
    if any(c not in out for c in ta + tb if c not in batch and c not in contracted):
        return None

    def plan(swap):
        first, second = (tb, ta) if swap else (ta, tb)
        left, right = [c for c in first if c not in second], [c for c in second if c not in first]
        views = (batch + left + contracted, batch + contracted + right)
        moved = sum(math.prod(size[c] for c in term) for term, view in zip((first, second), views)
                    if term and view[-1] != term[-1])  # numbers the product cannot read in place
        kept = batch + left + right
        flat = [tuple(math.prod(size[c] for c in group) for group in groups)
                for groups in ((batch, left, contracted), (batch, contracted, right))]
        # a copy costs where it leaves the caches; below that, a long last axis of the
        # product (few, long rows) serves best
        cost = (moved if moved > _COPY_COSTS else 0, -flat[1][2])
        return cost, (swap, tuple(first.index(c) for c in views[0]), flat[0],
                      tuple(second.index(c) for c in views[1]), flat[1],
                      tuple(size[c] for c in kept), tuple(kept.index(c) for c in out),
                      list(out) == left + batch + right)
    return min(plan(False), plan(True), key=lambda cost_and_plan: cost_and_plan[0])[1]


_COPY_COSTS = 1 << 16  # numbers: gathering more than these into a copy costs more than the product


def _by_matmul(plan, a, b):
    """The contraction ``plan`` (:func:`_matmul_plan`) of the NumPy arrays ``a`` and ``b``."""
    swap, perm_l, flat_l, perm_r, flat_r, kept_shape, perm_out, rows_outside = plan
    left, right = (b, a) if swap else (a, b)
    left, right = left.transpose(perm_l).reshape(flat_l), right.transpose(perm_r).reshape(flat_r)
    if rows_outside and _strewn(left, 1) and right.nbytes <= _SLAB_BYTES:
        return _by_rows(left, right).reshape(tuple(kept_shape[i] for i in perm_out))
    product = _in_slabs(left, right) if _strewn(left, 2) and _strewn(right, 1) else np.matmul(left, right)
    return product.reshape(kept_shape).transpose(perm_out)


# The bytes of the operands that one slab of a product reads: about a core's L2 cache.
_SLAB_BYTES = 1 << 20


def _strewn(operand, axis):
    """Whether ``operand`` of a batched product (more than one batch) is larger than the
    caches and has its ``axis`` outermost in memory: each batch's rows are strewn over the
    whole array, and a product taking one batch after the other reads every row from memory
    once per batch (GMM's ``"mij,mik->ijk"``, each of 25 components summing over 10,000
    points of ``(10000, 25, 10)`` arrays)."""
    return (operand.shape[0] > 1 and operand.nbytes > 2 * _SLAB_BYTES
            and operand.strides[axis] > operand.strides[0])


def _in_slabs(left, right):
    """``left @ right`` summed over slabs of the contracted axis that fit the caches, each
    slab read once for every batch (GMM's ``"mij,mik->ijk"`` at 10,000 points of 25 x 10:
    9.3 ms in one product, 4.5 ms so)."""
    step = max(1, _SLAB_BYTES * left.shape[2] // (left.nbytes + right.nbytes))
    product = np.matmul(left[:, :, :step], right[:, :step])
    for start in range(step, left.shape[2], step):
        product += np.matmul(left[:, :, start:start + step], right[:, start:start + step])
    return product


def _by_rows(left, right):
    """``left @ right`` as a C-contiguous ``(m, b, n)`` array, made from slabs of the left
    operand's rows that fit the caches. The product's ``(b, m, n)`` transposed would be a
    view whose rows are strewn too, and NumPy's elementwise functions then combine it with
    arrays of the output's own layout about three times slower (GMM's ``"ijk,mik->mij"``
    and ``"mij,ijk->mik"`` at 10,000 points of 25 x 10, the product and one such addition:
    13.5 and 16.9 ms from the transposed product, 11.1 and 13.2 ms so)."""
    batches, rows, _ = left.shape
    out = np.empty((rows, batches, right.shape[2]), np.result_type(left, right))
    step = max(1, _SLAB_BYTES * rows // left.nbytes)
    slab = np.empty((batches, min(step, rows), right.shape[2]), out.dtype)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        out[start:stop] = np.matmul(left[:, start:stop], right, out=slab[:, :stop - start]).transpose(1, 0, 2)
    return out


def _split_subscripts(subscripts):
    ins, out = subscripts.split("->")
    return ins.split(","), out


def _unused_letters(subscripts):
    return iter([c for c in string.ascii_letters if c not in subscripts])


def _einsum_jvp(primals, tangents, ans, *, subscripts):
    # Multilinear: the sum over operands of einsum with that operand's tangent.
    terms, out = _split_subscripts(subscripts)
    batch = next(_unused_letters(subscripts)) if _batched(primals, tangents) else ""
    result = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        subs = list(terms)
        subs[i] = batch + subs[i]
        ops_ = list(primals)
        ops_[i] = t
        term = bind(_einsum_p, *ops_, subscripts=",".join(subs) + "->" + batch + out)
        result = term if result is None else _add(result, term)
    return result


def _einsum_vjp(g, ans, *args, subscripts):
    # The cotangent of operand i contracts g with the other operands onto
    # operand i's subscripts; a letter found only in operand i is supplied by
    # a vector of ones (broadcasting), a repeated letter (a diagonal) by an
    # identity matrix pairing it with a fresh letter.
    terms, out = _split_subscripts(subscripts)
    sizes = {}
    for term, a in zip(terms, args):
        sizes.update(zip(term, shape_of(a)))
    cots = []
    for i, term in enumerate(terms):
        others = [j for j in range(len(terms)) if j != i]
        available = set(out).union(*(terms[j] for j in others))
        fresh = _unused_letters(subscripts)
        target, extra_subs, extra_ops, seen = [], [], [], set()
        for c in term:
            if c in seen:
                c2 = next(fresh)
                target.append(c2)
                extra_subs.append(c + c2)
                extra_ops.append(eye_like(args[i], sizes[c]))
                continue
            seen.add(c)
            target.append(c)
            if c not in available:
                extra_subs.append(c)
                extra_ops.append(constant_like(args[i], "ones", (sizes[c],)))
        subs = ",".join([out] + [terms[j] for j in others] + extra_subs) + "->" + "".join(target)
        cots.append(bind(_einsum_p, g, *[args[j] for j in others], *extra_ops, subscripts=subs))
    return tuple(cots)


_einsum_p = custom("einsum", _einsum_impl, jvp=_einsum_jvp, vjp=_einsum_vjp,
                   chunked=True, saves="inputs", fresh=True)


@lru_cache(maxsize=512)
def _parse_einsum(subscripts, shapes):
    """Explicit subscripts without ellipses, the output, and the size of each letter.

    ``shapes`` is a tuple of shapes; the result is cached, since a program
    calls einsum with the same subscripts and shapes over and over.
    """
    s = subscripts.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} contain '->' more than once")
    ins, arrow, out = s.partition("->")
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operand(s), "
                         f"got {len(shapes)} operand(s)")
    ellipsis_ndims = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        letters = term.replace("...", "", 1)
        bad = [c for c in letters if c not in string.ascii_letters]
        if bad:
            raise ValueError(f"einsum: operand {i} subscripts {term!r} contain invalid "
                             f"character(s) {bad!r}; use letters and one '...'")
        if "..." in term:
            if len(shape) < len(letters):
                raise ValueError(f"einsum: operand {i} has shape {shape} (ndim {len(shape)}), "
                                 f"fewer axes than the {len(letters)} letters of {term!r}")
            ellipsis_ndims.append(len(shape) - len(letters))
        else:
            if len(letters) != len(shape):
                raise ValueError(f"einsum: operand {i} has shape {shape} (ndim {len(shape)}), "
                                 f"but its subscripts {term!r} name {len(letters)} axes")
            ellipsis_ndims.append(None)
    fresh = [c for c in string.ascii_letters if c not in s]
    n_ell = max((d for d in ellipsis_ndims if d is not None), default=0)
    if n_ell > len(fresh):
        raise ValueError("einsum: too many axes under '...' for the letters left")
    ell = "".join(fresh[:n_ell])
    terms_x = [t if d is None else t.replace("...", ell[n_ell - d:]) for t, d in zip(terms, ellipsis_ndims)]
    if arrow:
        if "..." in out:
            out = out.replace("...", ell, 1)
        elif n_ell:
            raise ValueError(f"einsum: the operands have axes under '...' but the output "
                             f"{out!r} has no '...'")
        bad = [c for c in out if c not in string.ascii_letters]
        if bad:
            raise ValueError(f"einsum: output subscripts {out!r} contain invalid character(s) {bad!r}")
        counts = Counter(out)
        if any(k > 1 for k in counts.values()):
            raise ValueError(f"einsum: output subscripts {out!r} repeat a letter")
        missing = [c for c in out if c not in "".join(terms_x)]
        if missing:
            raise ValueError(f"einsum: output letter(s) {missing} do not appear in the inputs")
    else:
        counts = Counter("".join(t.replace("...", "") for t in terms))
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    sizes = {}
    for i, (term, shape) in enumerate(zip(terms_x, shapes)):
        own = {}
        for c, n in zip(term, shape):
            if own.setdefault(c, n) != n:
                raise ValueError(f"einsum: operand {i} repeats letter {c!r} over axes of "
                                 f"different sizes ({own[c]} != {n}), shape {shape}")
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(f"einsum: letter {c!r} has size {sizes[c]} in one operand and "
                                 f"{n} in operand {i} (shape {shape})")
    return tuple(terms_x), out, MappingProxyType(sizes)


def einsum(subscripts, *operands, optimize=None):
    """Einstein summation, as ``numpy.einsum``, differentiable in every mode.

    Parameters
    ----------
    subscripts : str
        Letters per operand separated by commas, ``'...'`` for broadcast
        axes, and optionally ``'->'`` and the output letters (without it,
        the output is the letters that appear once, sorted, as in NumPy).
        Axes of size 1 broadcast against the same letter elsewhere.
    *operands : arrays or value types
    optimize : ignored
        Accepted for NumPy compatibility; the contraction order is chosen
        by the backend.

    The backend must provide ``einsum`` (NumPy and CuPy do; the array API
    standard does not, so ``array_api_strict`` raises NotImplementedError).

    Examples
    --------
    >>> import numpy as np
    >>> from dualad import jvp, ops
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> out, t = jvp(lambda a: ops.einsum("ij,ij->", a, a), (a,), (np.ones_like(a),))
    >>> float(out), float(t)
    (30.0, 20.0)
    """
    del optimize
    if not isinstance(subscripts, str):  # the interleaved form: operand, sublist, ...
        subscripts, operands = _einsum_subscripts((subscripts,) + operands)
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    terms, out, sizes = _parse_einsum(subscripts, tuple(shape_of(o) for o in operands))
    ops_ = []
    for term, o in zip(terms, operands):
        target = tuple(sizes[c] for c in term)
        if shape_of(o) != target:
            o = _shape.broadcast_to(o, target)
        ops_.append(o)
    return bind(_einsum_p, *ops_, subscripts=",".join(terms) + "->" + out)



def _einsum_subscripts(args):
    """The operands and subscripts of the interleaved form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``."""
    letters = string.ascii_letters

    def term(sub):
        if not isinstance(sub, (list, tuple)) or not all(
                s is Ellipsis or (isinstance(s, int) and 0 <= s < len(letters)) for s in sub):
            raise TypeError("einsum: subscripts must be a string such as 'ij,jk->ik', or the "
                            "interleaved form einsum(a, [0, 1], b, [1, 2], [0, 2]) with sublists "
                            f"of ints below {len(letters)}; got a sublist {sub!r}")
        return "".join("..." if s is Ellipsis else letters[s] for s in sub)

    operands, terms = list(args[0::2]), [term(s) for s in args[1::2]]
    out = "->" + term(args[-1]) if len(args) % 2 else ""
    if len(args) % 2:
        operands = operands[:-1]
    return ",".join(terms) + out, operands
