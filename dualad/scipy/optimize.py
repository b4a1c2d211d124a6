"""``scipy.optimize``'s root finders and minimizers, whose solutions carry derivatives.

Same signatures as SciPy's; each calls SciPy for the solve and returns SciPy's result
with the solution (``x``, or ``root``) differentiable with respect to every value that
``fun``, ``args`` (and ``jac``, ``hess``, ``bracket``, ...) hold, through
:func:`dualad.custom_root`: ``root`` and ``root_scalar`` by the residual
``F(x) = fun(x, *args) = 0``, ``minimize``, ``least_squares`` and ``minimize_scalar``
by the stationarity condition ``grad f(x) = 0`` (a symmetric system: the Hessian).
Bounds of ``minimize`` and ``least_squares`` hold the variables at an active bound
(:mod:`dualad.scipy._bounds`). The derivative takes one linear solve with ``dF/dx`` at
the solution (built and factorized once up to 200 unknowns, Krylov beyond:
:mod:`dualad.scipy._tangent`), never SciPy's iterations, and raises
:class:`NotConvergedError` where SciPy did not converge. With ``constraints``,
``minimize``'s condition is the KKT system of the Lagrangian in the unknowns and the
multipliers (:mod:`dualad.scipy._constraints`).

Under ``vmap`` SciPy solves one element at a time, and the result's other fields are
those of the last element's solve (``success`` is that of all of them). Arrays of
another library (CuPy, any array-API library) are solved on NumPy copies, with the
functions handed their own library's arrays, and the solution comes back in that library
(:mod:`dualad.scipy._host`); ``minimize`` with constraints takes NumPy arrays only.

Examples
--------
>>> import numpy as np
>>> import dualad
>>> from dualad.scipy import optimize
>>> def fit(a):   # the minimizer of (x - a)**2 + x**4: 2 (x - a) + 4 x**3 = 0
...     return optimize.minimize(lambda x: ((x - a) ** 2 + x ** 4).sum(), np.zeros(1),
...                              method="BFGS", options={"gtol": 1e-12}).x
>>> x = fit(1.0)
>>> dx = dualad.derivative(fit)(1.0)           # 2 / (2 + 12 x**2)
>>> bool(np.allclose(dx, 2.0 / (2.0 + 12.0 * x ** 2)))
True
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from dualad import ops
from dualad._base.backend import NUMPY_XP, scipy_module
from dualad._base.checks import check_callable, check_differentiable
from dualad._base.core import Value
from dualad._base.reverse_mode import registered_vjp
from dualad._base.shapes import dtype_of, raw, shape_of
from dualad._forward.transforms import jacfwd
from dualad._implicit.closure import Closed
from dualad._implicit.root import implicit_root
from dualad._primitives.shape import reshape
from dualad.scipy._bounds import Box, least_squares_box, minimize_box
from dualad.scipy._constraints import kkt_condition, recover, rows_of
from dualad.scipy._host import Host, host_values
from dualad.scipy._solves import NotConvergedError, Solves, as_pytree, check_args
from dualad.scipy._tangent import tangent_solver

__all__ = ["NotConvergedError", "least_squares", "minimize", "minimize_scalar", "root",
           "root_scalar"]


def _flat(x0: Any, who: str) -> Any:
    """The initial guess as SciPy takes it: a vector of floats."""
    check_differentiable(x0, f"{who}: x0")
    return reshape(x0, (-1,))


def _first(out: Any, returns_more: bool) -> Any:
    """The function's value where it returns more (``jac=True``: the value and its derivative)."""
    return out[0] if returns_more else out


def gradient(objective: Callable, x: Any, who: str) -> Any:
    """The gradient of a scalar ``objective`` at ``x``: by the registered reverse mode, or by
    forward mode (``n`` passes) where none is registered."""
    try:
        vjp = registered_vjp(who, "")
    except NotImplementedError:
        return jacfwd(objective)(x)
    out, pull = vjp(objective, x)
    if shape_of(out) != ():  # the shape of one element under vmap, as the user sees it
        raise ValueError(f"{who}: fun must return a scalar (the objective), got shape "
                         f"{shape_of(out)}")
    host = Host(out)
    return pull(host.to_user(np.ones((), dtype=host.dtype(dtype_of(out)))))[0]


def _optimize_result(solves: Solves, x: Any) -> Any:
    result = type(solves.last)(solves.last)
    result.x = x
    result.success = solves.all_converged
    return as_pytree(result)


def root(fun: Callable, x0: Any, args: Any = (), method: str = "hybr", jac: Any = None,
         tol: float | None = None, callback: Callable | None = None,
         options: dict | None = None) -> Any:
    """A root of ``fun(x, *args)``, by ``scipy.optimize.root``, with ``x`` differentiable.

    Parameters and result are SciPy's (every ``method`` SciPy has). The derivative of
    ``x`` is ``-(dF/dx)^-1 dF/dtheta`` at the root, with respect to every value that
    ``fun``, ``jac`` and ``args`` hold; its solve is dense up to 200 unknowns,
    GMRES beyond.

    Raises
    ------
    NotConvergedError
        When a derivative is taken where SciPy did not converge.
    numpy.linalg.LinAlgError
        When a derivative is taken where ``dF/dx`` is singular.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> from dualad.scipy.optimize import root
    >>> def equilibrium(p):   # x0 + x1 = p0, x0 x1 = p1
    ...     return root(lambda x: np.stack([x[0] + x[1] - p[0], x[0] * x[1] - p[1]]),
    ...                 np.array([3.0, 0.5]), tol=1e-12).x
    >>> np.round(equilibrium(np.array([3.0, 2.0])), 8)
    array([2., 1.])
    >>> np.round(reverse.jacrev(equilibrium)(np.array([3.0, 2.0])), 8)
    array([[ 2., -1.],
           [-1.,  1.]])
    """
    who = "dualad.scipy.optimize.root"
    so = scipy_module(NUMPY_XP, "optimize", who)
    check_callable(fun, who, "fun")
    args = check_args(args, who)
    x0 = _flat(x0, who)
    host = Host(x0)
    solves = Solves(who)

    def residual(x):
        return _first(fun(x, *args), jac is True)

    def solve(_, x):
        res = so.root(host.wrap(fun), host.to_scipy(x), args=args, method=method,
                      jac=host.wrap(jac), tol=tol, callback=host.wrap(callback, given=2),
                      options=options)
        solves.record(res, res.success, res.message)
        return host.to_user(res.x)

    x = implicit_root(Closed(residual, [solve], who, "fun"), x0, solve,
                      tangent_solver(who, symmetric=False), check=solves.check)
    return _optimize_result(solves, x)


def minimize(fun: Callable, x0: Any, args: Any = (), method: str | None = None, jac: Any = None,
             hess: Any = None, hessp: Callable | None = None, bounds: Any = None,
             constraints: Any = (), tol: float | None = None, callback: Callable | None = None,
             options: dict | None = None) -> Any:
    """A local minimizer of ``fun(x, *args)``, by ``scipy.optimize.minimize``, with ``x``
    differentiable.

    Parameters and result are SciPy's. At the minimizer the gradient vanishes, so the
    derivative of ``x`` is ``-H^-1 d(grad f)/dtheta``, ``H`` the Hessian in ``x`` (built by
    forward over reverse mode and factorized once), with respect to every value ``fun``
    and ``args`` hold; ``jac``, ``hess`` and ``hessp`` only serve SciPy's solve. The
    result's ``fun`` is differentiable too. With ``bounds`` (constants; L-BFGS-B, TNC,
    SLSQP, Powell, Nelder-Mead, trust-constr, COBYLA, COBYQA), a variable at a bound with
    the gradient pushing outward is active: its derivative is zero, and the free
    variables' derivative solves the free block of ``H`` (:mod:`dualad.scipy._bounds`).

    With ``constraints`` (dicts ``{'type': 'eq' or 'ineq', 'fun', 'jac', 'args'}``,
    ``NonlinearConstraint``, ``LinearConstraint``, whose ``A``, ``lb`` and ``ub`` are
    constants; SLSQP, trust-constr, COBYLA, COBYQA), the derivative is that of the KKT
    system of the Lagrangian ``f - mu . c`` in ``(x, mu)``: the equalities and the
    inequalities active at the solution hold, the inactive ones do not count, and
    ``theta`` may enter ``fun``, the constraints' functions (through their closures or
    ``args``) or both. The result gains ``multipliers``, differentiable: one per row of
    every constraint, in the order given, with ``grad f = sum J^T mu`` (SLSQP's sign,
    minus trust-constr's ``v``: ``mu >= 0`` at a lower bound, ``<= 0`` at an upper one,
    0 where inactive), recovered from stationarity at SciPy's ``x`` by least squares. A
    row within 1e-6 of its bound (relative to the size of its terms) is active, and so
    is one whose trust-constr multiplier outweighs its slack.

    Raises
    ------
    NotConvergedError
        When a derivative is taken where SciPy did not converge, or at an ``x`` that is
        no KKT point (outside the bounds, or at one with the gradient pointing into them;
        a constraint violated, a multiplier of the wrong sign, the Lagrangian's gradient
        not zero).
    numpy.linalg.LinAlgError
        When a derivative is taken where the Hessian (its free block; with constraints,
        the KKT matrix) is singular, or where the gradients of the active constraints are
        linearly dependent (LICQ fails: the multipliers are not determined).

    Warns
    -----
    RuntimeWarning
        When a derivative is taken where a variable sits at a bound with a near-zero
        gradient, or an inequality is active with a near-zero multiplier (strict
        complementarity fails): the derivative is one-sided there (this one holds them).

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> import dualad
    >>> from dualad.scipy.optimize import minimize
    >>> t = np.array([0.0, 1.0, 2.0])
    >>> def slope(y):   # the least-squares slope of y over t, through the origin
    ...     return minimize(lambda w: ((w[0] * t - y) ** 2).sum(), np.zeros(1), method="BFGS").x[0]
    >>> np.round(reverse.grad(slope)(np.array([0.0, 1.0, 2.0])), 6)   # t / (t . t)
    array([0. , 0.2, 0.4])
    >>> def nearest(c):   # the point of the box [0, 1]^2 nearest to c
    ...     return minimize(lambda x: ((x - c) ** 2).sum(), np.full(2, 0.5), method="L-BFGS-B",
    ...                     bounds=[(0.0, 1.0), (0.0, 1.0)]).x
    >>> c = np.array([0.3, 2.0])                          # x* = (0.3, 1): x[1] is held at 1
    >>> np.round(dualad.jacfwd(nearest)(c), 6) + 0.0      # (+ 0.0: no negative zeros)
    array([[1., 0.],
           [0., 0.]])
    >>> def closest(c):   # the point of the unit circle nearest to c: c / |c|
    ...     return minimize(lambda x: ((x - c) ** 2).sum(), np.array([1.0, 0.0]), method="SLSQP",
    ...                     constraints={"type": "eq", "fun": lambda x: x @ x - 1.0},
    ...                     options={"ftol": 1e-11})
    >>> c = np.array([3.0, 4.0])
    >>> np.round(dualad.jacfwd(lambda c: closest(c).x)(c), 6)   # (I - x x^T) / |c|
    array([[ 0.128, -0.096],
           [-0.096,  0.072]])
    >>> np.round(closest(c).multipliers, 6)                     # 1 - |c|
    array([-4.])
    >>> np.round(reverse.grad(lambda c: closest(c).fun)(c), 6)  # of (|c| - 1)^2
    array([4.8, 6.4])
    """
    who = "dualad.scipy.optimize.minimize"
    so = scipy_module(NUMPY_XP, "optimize", who)
    check_callable(fun, who, "fun")
    args = check_args(args, who)
    x0 = _flat(x0, who)
    host = Host(x0)
    bounds = host.bounds(bounds)
    box = minimize_box(bounds, shape_of(x0)[0], host.dtype(dtype_of(x0)), who, host)
    solves = Solves(who)

    def objective(x):
        return _first(fun(x, *args), jac is True)

    if constraints is not None and not (isinstance(constraints, (list, tuple))
                                        and len(constraints) == 0):
        if host.foreign:
            raise NotImplementedError(
                f"{who}: with constraints, x0 must be a NumPy array (SciPy's), got an array of "
                f"{host.library}: convert x0 and the arrays the functions hold to NumPy")
        given = {"args": args, "method": method, "jac": jac, "hess": hess, "hessp": hessp,
                 "bounds": bounds, "constraints": constraints, "tol": tol, "callback": callback,
                 "options": options}
        return _constrained(fun, objective, x0, given, box, solves, so, who)

    def stationarity(x):
        return gradient(objective, x, who)

    def solve(_, x):
        res = so.minimize(host.wrap(fun), host.to_scipy(x), args=args, method=method,
                          jac=host.wrap(jac), hess=host.wrap(hess), hessp=host.wrap(hessp, given=2),
                          bounds=bounds, tol=tol, callback=host.wrap(callback, given=2),
                          options=options)
        record(solves, res, res.success, res.message, box, stationarity, host,
               # the quasi-Newton methods' "precision loss": the line search stalled, at the
               # minimum as a rule (a finite-difference gradient's noise); warned of, not refused
               doubtful="precision loss" in str(res.message))
        return host.to_user(res.x)

    condition = stationarity if box is None else box.condition(stationarity)
    x = implicit_root(Closed(condition, [solve], who, "fun"), x0, solve,
                      tangent_solver(who, symmetric=True), symmetric=True, check=solves.check)
    result = _optimize_result(solves, x)
    if isinstance(x, Value):  # the minimum's value moves too
        result.fun = objective(x)
    return result


def _constrained(fun: Callable, objective: Callable, x0: Any, given: dict, box: Box | None,
                 solves: Solves, so: Any, who: str) -> Any:
    """``minimize`` of ``fun`` with constraints (``given``: SciPy's other arguments): the root
    of the KKT system in ``z = (x, multipliers)`` (:mod:`dualad.scipy._constraints`)."""
    rows, lb, ub, names = rows_of(given["constraints"], x0, so, who)
    n, dtype = shape_of(x0)[0], dtype_of(x0)

    def solve(_, z):
        # float64, as SciPy solves (SLSQP refuses a float32 x0)
        res = so.minimize(fun, np.asarray(z[:n], dtype=np.float64), **given)
        x = res.x
        g = raw(gradient(objective, x, who))
        y, jac = raw(rows(x)), raw(jacfwd(rows)(x))
        v = res.get("v")  # trust-constr's multipliers: minus ours, one array per constraint
        hint = None
        if v is not None and sum(np.size(a) for a in v) >= lb.size:
            hint = -np.concatenate([np.ravel(a) for a in v])[:lb.size]
        out = recover(x, g, jac, y, lb, ub, names, np.dtype(dtype),
                      held=None if box is None else box.held(x), hint=hint)
        problem, caveat = out.problem, out.caveat
        if problem is None and box is not None:
            problem, held_caveat = box.check(x, out.lagrangian_gradient)
            caveat = "; ".join(c for c in (caveat, held_caveat) if c) or None
        solves.record(res, res.success and problem is None, problem or res.message,
                      caveat=caveat, singular=out.singular)
        return np.concatenate([x, out.mu])

    condition = kkt_condition(lambda fn, x: gradient(fn, x, who), objective, rows, lb, ub, n, box,
                              dtype)
    z0 = ops.concatenate([x0, np.zeros(lb.size, dtype=dtype)])
    z = implicit_root(Closed(condition, [solve], who, "fun"), z0, solve,
                      tangent_solver(who, symmetric=True), symmetric=True, check=solves.check)
    x = z[:n]
    result = _optimize_result(solves, x)
    result.multipliers = z[n:]
    if isinstance(x, Value):
        result.fun = objective(x)
    return result


def record(solves: Solves, res: Any, converged: bool, message: Any, box: Box | None,
           stationarity: Callable, host: Host, doubtful: bool = False) -> None:
    """Record SciPy's solve ``res``, with the KKT check of its ``x`` where there are bounds."""
    problem = caveat = None
    if box is not None:
        g = host.to_scipy(raw(stationarity(host.to_user(res.x))))
        problem, caveat = box.check(res.x, g)
    solves.record(res, converged and problem is None, problem or message,
                  doubtful=doubtful and problem is None, caveat=caveat)


def _robust(loss: Any, who: str) -> Callable:
    """``rho(z)`` of ``least_squares``'s ``loss`` (SciPy's formulas), written with
    differentiable operations; a callable ``loss`` gives ``rho`` as its first row."""
    if callable(loss):
        return lambda z: loss(z)[0]
    if loss == "linear":
        return lambda z: z
    if loss == "soft_l1":
        return lambda z: 2.0 * (ops.sqrt(1.0 + z) - 1.0)
    if loss == "huber":  # sqrt only where z > 1: its derivative at 0 would make nan in reverse
        return lambda z: ops.where(z <= 1.0, z, 2.0 * ops.sqrt(ops.where(z <= 1.0, 1.0, z)) - 1.0)
    if loss == "cauchy":
        return ops.log1p
    if loss == "arctan":
        return ops.arctan
    raise ValueError(f"{who}: loss must be 'linear', 'soft_l1', 'huber', 'cauchy', 'arctan' or "
                     f"a callable, got {loss!r}")


def least_squares(fun: Callable, x0: Any, jac: Any = "2-point", bounds: Any = (-np.inf, np.inf),
                  method: str = "trf", ftol: float | None = 1e-8, xtol: float | None = 1e-8,
                  gtol: float | None = 1e-8, x_scale: Any = None, loss: Any = "linear",
                  f_scale: float = 1.0, diff_step: Any = None, tr_solver: str | None = None,
                  tr_options: dict | None = None, jac_sparsity: Any = None,
                  max_nfev: int | None = None, verbose: int = 0, args: Any = (),
                  kwargs: dict | None = None, callback: Callable | None = None,
                  workers: Any = None) -> Any:
    """A local minimizer of ``cost(x) = 1/2 sum(rho(fun(x, *args, **kwargs)**2))``, by
    ``scipy.optimize.least_squares``, with ``x`` differentiable.

    Parameters and result are SciPy's (``trf``, ``dogbox``, ``lm``; every ``loss``, and
    ``f_scale``). At the solution the gradient of the cost vanishes (``J^T r = 0`` for
    the plain loss), so the derivative of ``x`` is ``-H^-1 d(J^T r)/dtheta`` with ``H``
    the cost's full Hessian, ``J^T J`` plus the residuals' second-order terms (built
    by forward over reverse mode and factorized once), with respect to every value
    ``fun``, ``args`` and ``kwargs`` hold; ``jac`` only serves SciPy's solve. With
    ``bounds`` (constants), a variable at a bound is held there, as in
    :func:`minimize`. The result's other fields (``fun``, ``jac``, ``cost``) are SciPy's
    numbers.

    Raises
    ------
    NotConvergedError
        When a derivative is taken where SciPy did not converge (``status <= 0``), or
        at a bound with the gradient pointing into the box.
    numpy.linalg.LinAlgError
        When a derivative is taken where the Hessian (its free block) is singular: more
        unknowns than the residuals determine.

    Examples
    --------
    >>> import numpy as np
    >>> import reverse
    >>> from dualad.scipy.optimize import least_squares
    >>> t = np.array([0.0, 1.0, 2.0, 3.0])
    >>> def line(y):   # the least-squares line through (t, y): its slope and intercept
    ...     return least_squares(lambda w: w[0] * t + w[1] - y, np.zeros(2), method="lm").x
    >>> np.round(line(np.array([1.0, 3.0, 5.0, 7.0])), 6)
    array([2., 1.])
    >>> np.round(reverse.jacrev(line)(np.array([1.0, 3.0, 5.0, 7.0])), 6)   # (A^T A)^-1 A^T
    array([[-0.3, -0.1,  0.1,  0.3],
           [ 0.7,  0.4,  0.1, -0.2]])
    """
    who = "dualad.scipy.optimize.least_squares"
    so = scipy_module(NUMPY_XP, "optimize", who)
    check_callable(fun, who, "fun")
    args = check_args(args, who)
    kwargs = {} if kwargs is None else dict(kwargs)
    rho = _robust(loss, who)
    x0 = _flat(x0, who)
    host = Host(x0)
    bounds = host.bounds(bounds)
    box = least_squares_box(bounds, shape_of(x0)[0], host.dtype(dtype_of(x0)), who, host)
    # passed on where given: SciPy's defaults of these differ between its versions
    given = {name: value for name, value in (("x_scale", host_values(x_scale)),
                                             ("callback", host.wrap(callback)),
                                             ("workers", workers)) if value is not None}
    solves = Solves(who)

    def cost(x):
        r = reshape(fun(x, *args, **kwargs), (-1,))
        return 0.5 * f_scale ** 2 * ops.sum(rho((r / f_scale) ** 2))

    def stationarity(x):
        return gradient(cost, x, who)

    def solve(_, x):
        res = so.least_squares(host.wrap(fun), host.to_scipy(x), jac=host.wrap(jac),
                               bounds=bounds, method=method, ftol=ftol,
                               xtol=xtol, gtol=gtol, loss=host.wrap(loss),
                               f_scale=host_values(f_scale),
                               diff_step=host_values(diff_step), tr_solver=tr_solver,
                               tr_options={} if tr_options is None else tr_options,
                               jac_sparsity=host_values(jac_sparsity), max_nfev=max_nfev,
                               verbose=verbose,
                               args=args, kwargs=kwargs, **given)
        record(solves, res, res.status > 0, res.message, box, stationarity, host)
        return host.to_user(res.x)

    condition = stationarity if box is None else box.condition(stationarity)
    x = implicit_root(Closed(condition, [solve], who, "fun"), x0, solve,
                      tangent_solver(who, symmetric=True), symmetric=True, check=solves.check)
    return _optimize_result(solves, x)


def root_scalar(f: Callable, args: Any = (), method: str | None = None, bracket: Any = None,
                fprime: Any = None, fprime2: Any = None, x0: Any = None, x1: Any = None,
                xtol: float | None = None, rtol: float | None = None, maxiter: int | None = None,
                options: dict | None = None) -> Any:
    """A root of the scalar ``f(x, *args)``, by ``scipy.optimize.root_scalar``, with ``root``
    differentiable.

    Returns SciPy's ``RootResults``; the derivative of ``root`` is ``-(df/dtheta) / f'(root)``
    with respect to every value ``f`` and ``args`` hold (``bracket``, ``x0`` and ``x1`` only
    guide the search).

    Raises
    ------
    NotConvergedError
        When a derivative is taken where SciPy did not converge.
    numpy.linalg.LinAlgError
        When a derivative is taken at a root where ``f'`` vanishes (a multiple root).

    Examples
    --------
    >>> import dualad
    >>> from dualad.scipy.optimize import root_scalar
    >>> def cube_root(a):
    ...     return root_scalar(lambda x: x ** 3 - a, bracket=(0.0, 3.0), xtol=1e-14).root
    >>> round(float(cube_root(8.0)), 10), round(float(dualad.derivative(cube_root)(8.0)), 10)
    (2.0, 0.0833333333)
    """
    who = "dualad.scipy.optimize.root_scalar"
    so = scipy_module(NUMPY_XP, "optimize", who)
    check_callable(f, who, "f")
    args = check_args(args, who)
    solves = Solves(who)

    def residual(x):
        return _first(f(x, *args), fprime is True or fprime2 is True)

    def solve(_, guess):
        res = so.root_scalar(f, args=args, method=method, bracket=bracket, fprime=fprime,
                             fprime2=fprime2, x0=x0, x1=x1, xtol=xtol, rtol=rtol, maxiter=maxiter,
                             options=options)
        solves.record(res, res.converged, res.flag)
        return res.root

    x = implicit_root(Closed(residual, [solve], who, "f"), 0.0, solve,
                      tangent_solver(who, symmetric=False), check=solves.check)
    result = copy.copy(solves.last)
    result.root, result.converged = x, solves.all_converged
    return as_pytree(result)


def _at_bound(x: float, bounds: Any, slope: Callable, host: Host) -> str | None:
    """Why a bounded ``minimize_scalar``'s ``x`` is no interior minimum (None if it is one):
    the Newton step ``-f'/f''`` from it leaves the bounds, so the minimum is at a bound,
    where ``f' != 0`` and the interior derivative does not hold. ``host``: the library of
    the function's values, where ``x`` is put."""
    x = float(x)
    at = host.to_user(np.asarray(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        newton = x - np.float64(float(raw(slope(at)))) / np.float64(float(raw(jacfwd(slope)(at))))
    lo, hi = bounds
    if lo < newton < hi:
        return None
    return (f"the minimum lies at a bound of {tuple(bounds)} (x = {x:.6g}, f' != 0 there); the "
            "derivative at a bound is not supported yet")


def minimize_scalar(fun: Callable, bracket: Any = None, bounds: Any = None, args: Any = (),
                    method: str | None = None, tol: float | None = None,
                    options: dict | None = None) -> Any:
    """A local minimizer of the scalar ``fun(x, *args)``, by ``scipy.optimize.minimize_scalar``,
    with ``x`` differentiable.

    The derivative of ``x`` is ``-(df'/dtheta) / f''(x)`` at an interior minimum (with
    ``method="bounded"``, a minimum at a bound is not supported yet), with respect to every
    value ``fun`` and ``args`` hold.

    Raises
    ------
    NotConvergedError
        When a derivative is taken where SciPy did not converge, or with ``bounds`` at a
        minimum on a bound.
    numpy.linalg.LinAlgError
        When a derivative is taken where ``f''`` vanishes.

    Examples
    --------
    >>> import reverse
    >>> from dualad.scipy.optimize import minimize_scalar
    >>> def argmin(a):   # of x**4 / 4 - a x: x = a**(1/3)
    ...     return minimize_scalar(lambda x: x ** 4 / 4 - a * x, bracket=(0.0, 1.0),
    ...                            options={"xtol": 1e-12}).x
    >>> round(float(argmin(8.0)), 6), round(float(reverse.grad(argmin)(8.0)), 6)
    (2.0, 0.083333)
    """
    who = "dualad.scipy.optimize.minimize_scalar"
    so = scipy_module(NUMPY_XP, "optimize", who)
    check_callable(fun, who, "fun")
    args = check_args(args, who)
    solves = Solves(who)

    def slope(x):
        return gradient(lambda y: fun(y, *args), x, who)

    def solve(_, guess):
        res = so.minimize_scalar(fun, bracket=bracket, bounds=bounds, args=args, method=method,
                                 tol=tol, options=options)
        problem = None if bounds is None else _at_bound(res.x, bounds, slope,
                                                        Host(fun(res.x, *args)))
        solves.record(res, res.success and problem is None, problem or res.message)
        return res.x

    x = implicit_root(Closed(slope, [solve], who, "fun"), 0.0, solve,
                      tangent_solver(who, symmetric=True), symmetric=True, check=solves.check)
    return _optimize_result(solves, x)
