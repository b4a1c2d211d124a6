"""``scipy.integrate.solve_ivp``, whose solution carries derivatives.

Same signature as SciPy's, plus ``sensitivity``; it calls SciPy for the solve, so the
numbers are SciPy's, and returns SciPy's result with ``y`` differentiable with respect to
every value of dualad's transforms in ``y0``, in ``args`` and in what ``fun`` closes over
(found as ``checkpoint`` finds them: :func:`dualad.interpreter.reach`), in every mode
(``jvp``/``jacfwd``, ``reverse.grad``, ``vmap`` over parameters, ``jit``). With RK45,
RK23 and DOP853 the derivative is that of SciPy's numbers on its steps, held fixed
(:mod:`dualad._ode.steps`); with the other methods, that of the ODE's solution, computed by
SciPy too: forward sensitivities (the tangent ODE, integrated with the solution) or the
adjoint ODE (integrated backwards over the forward solve's dense output)
(:mod:`dualad._ode.sensitivities`).

Examples
--------
>>> import numpy as np
>>> import reverse
>>> from dualad.scipy.integrate import solve_ivp
>>> def y_at_1(k):   # y' = -k y, y(0) = 1: y(1) = exp(-k)
...     return solve_ivp(lambda t, y: -k * y, (0.0, 1.0), np.ones(1), t_eval=[1.0],
...                      rtol=1e-10, atol=1e-12).y[0, 0]
>>> round(float(reverse.grad(y_at_1)(2.0)), 8), round(float(-np.exp(-2.0)), 8)   # -exp(-k)
(-0.13533528, -0.13533528)
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dualad._base.backend import NUMPY_XP, scipy_module
from dualad._base.checks import check_callable, check_differentiable, describe
from dualad._base.core import Value
from dualad._base.shapes import dtype_of, ndim_of, raw, shape_of
from dualad._base.tree import flatten
from dualad._ode.entries import ivp_solution
from dualad._ode.events import differentiable_events, locate
from dualad._ode.problem import Problem
from dualad._staging.trace import nested_values, spoil_traces
from dualad.numpy import asarray
from dualad.scipy._host import Host
from dualad.scipy._solves import NotConvergedError, Solves, as_pytree, check_args

__all__ = ["NotConvergedError", "solve_ivp"]

_SENSITIVITIES = (None, "forward", "adjoint")
_SECOND_ORDERS = (None, "steps", "sensitivities")


def solve_ivp(fun: Callable, t_span: Any, y0: Any, method: Any = "RK45", t_eval: Any = None,
              dense_output: bool = False, events: Any = None, vectorized: bool = False,
              args: Any = None, *, rtol: Any = 1e-3, atol: Any = 1e-6,
              sensitivity: str | None = None, second_order: str | None = None,
              **options: Any) -> Any:
    """Solve ``y' = fun(t, y, *args)``, ``y(t_span[0]) = y0`` by ``scipy.integrate.solve_ivp``,
    with ``y`` differentiable.

    Parameters and result are SciPy's (every ``method``: RK45, RK23, DOP853, BDF, Radau,
    LSODA). ``y`` (at ``t_eval``, or at the solver's own times ``t``) carries derivatives
    with respect to every value of dualad's transforms that ``y0``, ``args`` and ``fun``
    (its closure, the globals and objects it names) hold. The times are not differentiated:
    ``t_span`` and ``t_eval`` must be plain numbers. ``y`` and its derivatives have ``y0``'s
    dtype (float32 in, float32 out; SciPy solves in float64), the gradients their operands'.
    A stiff method (BDF, Radau, LSODA) without ``jac`` (nor ``jac_sparsity``) gets ``fun``'s
    Jacobian by forward mode, exact, instead of SciPy's finite differences.

    With RK45, RK23 and DOP853, SciPy's solve records its accepted steps (and DOP853's the
    extra stages of its dense output, in the steps that hold a time of ``t_eval``), and the
    derivative is that of its numbers with the steps' sizes held fixed (what finite
    differences of the solve approach): forward mode carries the tangents through each
    step's stages; reverse mode walks back over them (``sensitivity="adjoint"``) or carries
    every direction forward and sums (``"forward"``). ``fun``'s Jacobian at every stage of
    every step comes from one call of its JVP mapped over them (:func:`dualad.vmap`; one
    call per stage where ``fun`` decides on its values, ``if y[0] > 0``), the parameters'
    cotangents from one pullback mapped over them: about one more solve's cost, with memory
    for the stages' Jacobians (beyond 2^24 numbers, as the other methods).

    With the other methods, the derivative is the solution of another ODE, solved by SciPy
    with the same method and ``rtol``, whose products with ``fun``'s Jacobian are compiled
    once per solve
    (:func:`dualad.jit`); a stiff method's Newton matrix is that ODE's exact Jacobian (for
    ``y`` of up to 400 numbers; beyond it ``J_y``'s blocks alone), the sensitivities' coupled
    to ``y`` by ``fun``'s second derivatives:

    - forward mode (``jvp``, ``jacfwd``; a chunk of directions in one solve): the forward
      sensitivities ``s' = J_y s + J_theta dtheta``, integrated with ``y``;
    - reverse mode (``reverse.grad``, ``vjp``), as ``sensitivity`` says: ``"forward"``,
      the forward sensitivities along every direction of the ``p`` numbers of ``y0`` and of
      the parameters, then the cotangent's sum (one solve of ``n (1 + p)`` unknowns);
      ``"adjoint"``, ``a' = -J_y^T a`` backwards from the last time, with ``a``'s products
      by the registered reverse mode and ``y`` from the forward solve's dense output (one
      more forward solve, and one backward solve of ``n + p`` unknowns per interval between
      the times of ``y``); None, ``"forward"`` for ``p <= 20``, ``"adjoint"`` beyond.

    The forward sensitivities take ``atol`` (an array's entry applies to each sensitivity of
    its component). The adjoint's ``a = dL/dy`` and quadratures ``q = dL/dtheta`` take one
    derived from it by duality, proportional to the cotangents: with ``y_i`` resolved to
    ``r_i = atol_i + rtol |y_i|`` where ``a`` starts, and ``eps = max_j |a_j| r_j``,
    ``atol(a_i) = rtol eps / r_i`` and ``atol(q_k) = eps / |theta_k|`` (a parameter 0's
    quadrature out of the error test): ``y``'s own atol, far below the rounding of a large
    adjoint, can stop the solve (:func:`dualad._ode.sensitivities.adjoint_atol`).

    Under ``jit`` the solve and its derivatives are steps of the program, replayed by SciPy
    at each call, where ``t_eval`` is given; with ``t_eval=None`` (whose number of times
    changes from call to call), and for second derivatives on the steps (which a program
    would take at the traced point's step sizes), the function runs eagerly, with a
    warning. Under ``vmap``
    each element is solved by SciPy in turn, at the times ``t_eval``, which must be given;
    the result's other fields are the last element's (``success`` is that of all). With
    ``dense_output``, ``sol(t)`` is differentiable too: each call solves again
    with ``t_eval = t``. With ``events``, ``t_events`` and ``y_events`` carry derivatives
    (the implicit function theorem on ``g(t_e, y(t_e)) = 0``: ``dt_e = -(g_y . dy(t_e) +
    g_theta) / (g_t + g_y . f)``), and so does the last column of ``y`` where a terminal event
    ended the solve (``t_eval=None``): SciPy's solve with the events locates them, ``y`` at
    its times and theirs comes from the entry's solve without them (one solve more). An
    event whose rate ``g_t + g_y . f`` is 0 raises; under ``vmap`` events raise
    NotImplementedError (each element has its own), and under ``jit`` a function with events
    runs eagerly, with a warning (a program would replay the located times as constants).

    Second derivatives (``mixed.hvp``, ``dualad.hessian``, a ``jvp`` of a ``grad``, a
    ``jacrev`` of a ``jacfwd``) are taken with every method. With RK45, RK23 and DOP853,
    by default (``second_order="steps"``), through the method's formulas on the solve's
    steps, written with dualad's operations and run eagerly (one evaluation of ``fun`` per
    stage, by nested transforms: far slower than the first derivative, and exact for
    SciPy's numbers). With the other methods, or ``second_order="sensitivities"``, as the
    derivatives of the forward sensitivities' ODE, ``(y, s)' = (f, J_y s + J_theta
    dtheta)``, solved again by SciPy with the same method and tolerances (``atol`` as for
    the forward sensitivities), whose own derivatives are taken as above (``fun``'s second
    derivatives by forward mode, its third in that system's Newton matrix): a derivative
    of a tangent solves it along its k directions (``n (1 + k)`` unknowns), then its
    tangent (twice that) or, in reverse mode, its adjoint or forward sensitivities (as
    ``sensitivity`` says, None choosing by that system's size as above); a derivative of
    a gradient solves it along every direction of the ``p`` numbers of ``y0`` and of the
    parameters, whatever ``sensitivity`` says: an H v by ``mixed.hvp`` takes five solves,
    of ``n``, ``2n``, the gradient's, ``n (1 + p)`` and ``2n (1 + p)`` unknowns, not one per
    parameter (the times: benchmarks/README.md, "Second derivatives with the stiff
    methods").

    Parameters
    ----------
    fun, t_span, y0, method, t_eval, dense_output, events, vectorized, args, rtol, atol, options
        As ``scipy.integrate.solve_ivp``'s.
    sensitivity : {None, "forward", "adjoint"}
        How reverse mode differentiates (see above); forward mode always takes the forward
        sensitivities.
    second_order : {None, "steps", "sensitivities"}
        How second derivatives are taken (see above): ``"steps"`` through the method's
        formulas on the solve's steps (RK45, RK23 and DOP853 only: exact for SciPy's
        numbers, eagerly), ``"sensitivities"`` through the forward sensitivities' ODE
        solved again (within the tolerances of the exact derivative; for a few parameters
        about 10-20 times faster, benchmarks/README.md); None, ``"steps"`` where the method
        has them. Under ``vmap`` the RK methods take the sensitivities' ODE whatever this
        says: each element of a batch has steps of its own.

    Returns
    -------
    OdeResult
        SciPy's, with ``y`` differentiable.

    Raises
    ------
    NotConvergedError
        When a derivative is taken where SciPy's solve failed (``success`` False), naming
        SciPy's message; a RuntimeError where a solve of the derivative itself fails.
    NotImplementedError
        Where ``y`` carries derivatives and ``y0`` or a value ``fun`` holds is an array of
        another library than NumPy (CuPy, array-api-strict): convert them to NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> import dualad
    >>> from dualad.scipy.integrate import solve_ivp
    >>> def oscillator(p):   # x'' = -p0 x - p1 x', x(0) = 1, x'(0) = 0; x at t = 1, 2
    ...     f = lambda t, y: np.stack([y[1], -p[0] * y[0] - p[1] * y[1]])
    ...     return solve_ivp(f, (0.0, 2.0), np.array([1.0, 0.0]), t_eval=[1.0, 2.0],
    ...                      rtol=1e-10, atol=1e-12).y[0]
    >>> jac = dualad.jacfwd(oscillator)(np.array([4.0, 0.0]))
    >>> t = np.array([1.0, 2.0])   # at p = (4, 0), x = cos(2t): the closed forms
    >>> bool(np.allclose(jac, np.stack([-t * np.sin(2 * t) / 4,
    ...                                 np.sin(2 * t) / 4 - t * np.cos(2 * t) / 2], axis=1)))
    True
    """
    who = "dualad.scipy.integrate.solve_ivp"
    si = scipy_module(NUMPY_XP, "integrate", who)
    check_callable(fun, who, "fun")
    if sensitivity not in _SENSITIVITIES:
        raise ValueError(f"{who}: sensitivity must be one of {_SENSITIVITIES}, got {sensitivity!r}")
    for name, value in (("t_span", t_span), ("t_eval", t_eval)):
        if any(isinstance(leaf, Value) for leaf in flatten(value)[0]):
            raise TypeError(f"{who}: {name} must be plain numbers (the times are not "
                            f"differentiated), got {describe(value)}")
    args = () if args is None else check_args(args, who)
    options = dict(options, **({"events": events} if events is not None else {}),
                   **({"vectorized": vectorized} if vectorized else {}))
    solves = Solves(who)
    if second_order not in _SECOND_ORDERS:
        raise ValueError(f"{who}: second_order must be one of {_SECOND_ORDERS}, got {second_order!r}")
    problem = Problem(fun, args, t_span, t_eval, method, rtol, atol, options, sensitivity, solves,
                      who, second_order=second_order)
    if problem.second_order == "steps" and not problem.on_steps:
        raise ValueError(f"{who}: second_order='steps' needs method='RK45', 'RK23' or 'DOP853' "
                         f"(whose solves record their steps), got method={method!r}; use "
                         "second_order='sensitivities' or None")
    traced = isinstance(y0, Value) or bool(problem.closed.values) or (
        isinstance(y0, (list, tuple)) and any(isinstance(v, Value) for v in flatten(y0)[0]))
    if not traced:  # nothing to differentiate: SciPy's call as it is
        return si.solve_ivp(fun, t_span, y0, method=method, t_eval=t_eval,
                            dense_output=dense_output, args=args or None, rtol=rtol, atol=atol,
                            **options)
    y0 = asarray(y0)
    check_differentiable(y0, f"{who}: y0")
    foreign = next((h for h in map(Host, (y0, *problem.closed.values)) if h.foreign), None)
    if foreign is not None:
        raise NotImplementedError(
            f"{who}: y carries derivatives on NumPy arrays (SciPy's) only; y0 or a value fun "
            f"holds is an array of {foreign.library}: convert them to NumPy")
    if ndim_of(y0) != 1:
        raise ValueError(f"{who}: y0 must be 1-dimensional, as SciPy's, got shape {np.shape(raw(y0))}")
    if np.dtype(dtype_of(y0)).kind == "c":
        raise NotImplementedError(f"{who}: complex y0 is not supported where y carries derivatives")
    located = None
    if events is not None:  # SciPy's solve with the events; y then up to its last time
        if any(getattr(v, "batches", False) for v in nested_values((y0, *problem.closed.values))):
            raise NotImplementedError(
                f"{who}: events under vmap are not supported: each element of the batch has its "
                "own event times, which SciPy locates one solve at a time; loop over the batch "
                "in Python instead")
        spoil_traces((y0, *problem.closed.values),
                         f"{who} with events: the event times SciPy locates depend on the traced "
                         "values, and a program would replay them as constants")
        located = locate(fun, t_span, y0, method, t_eval, args, rtol, atol, options, events, who)
        solves.record(located.result, located.result.success, located.result.message)
        options = {k: v for k, v in options.items() if k != "events"}
        times = located.times()
        problem = Problem(fun, args, (t_span[0], times[-1]), times, method, rtol, atol, options,
                          sensitivity, solves, who, second_order=second_order)
    if t_eval is None:
        spoil_traces((y0, *problem.closed.values),
                         f"{who} with t_eval=None: y's times are the solver's steps, whose number "
                         "changes with the traced values, and a program's shapes cannot")
    problem.resolve(math.prod(shape_of(y0)))  # an element's, under vmap
    t, y = ivp_solution(y0, problem)
    result = type(solves.last)(solves.last)
    result.t = solves.last.t if t_eval is not None else t
    result.y = y
    if located is not None:
        result = type(located.result)(located.result)
        result.y, result.t_events, result.y_events = differentiable_events(
            located, problem.t_eval, y, t_eval is None, who)
    result.success = solves.all_converged
    if dense_output:
        result.sol = _Dense(problem, y0)
    return as_pytree(result)


class _Dense:
    """``sol(t)``: ``y`` at ``t`` (a time or an array of them), differentiable, solved again."""

    __slots__ = ("problem", "y0")

    def __init__(self, problem: Problem, y0: Any):
        self.problem, self.y0 = problem, y0

    def __call__(self, t: Any) -> Any:
        p = self.problem
        times = np.atleast_1d(np.asarray(t, dtype=float))
        again = Problem(p.fun, p.args, p.t_span, times, p.method, p.rtol, p.atol, p.options,
                        p.asked, Solves(p.who), p.who, second_order=p.second_order)
        again.resolve(math.prod(shape_of(self.y0)))
        y = ivp_solution(self.y0, again)[1]
        again.solves.check()
        return y[:, 0] if np.ndim(t) == 0 else y
