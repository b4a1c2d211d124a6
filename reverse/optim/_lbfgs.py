"""``LBFGS``: limited-memory BFGS over all parameters as one flat vector, as PyTorch's."""

from __future__ import annotations

import math
from typing import Any, Callable

from dualad import ops
from dualad.interpreter import describe, raw, shape_of, zeros
from reverse._grad_mode import enable_grad, no_grad
from reverse._tensor import Tensor
from reverse.optim._base import Optimizer, Params, as_float
from reverse.optim._line_search import strong_wolfe
from reverse.optim._options import at_least_one, non_negative

__all__ = ["LBFGS"]


def _line_search_fn(name: str, value: Any) -> str | None:
    if value not in (None, "strong_wolfe"):
        raise ValueError(f"{name} must be None or 'strong_wolfe', got {value!r}")
    return value


class LBFGS(Optimizer):
    """L-BFGS, with a fixed step or PyTorch's strong-Wolfe line search.

    PyTorch's ``torch.optim.LBFGS`` (after minFunc), iterate for iterate:
    each :meth:`step` runs up to ``max_iter`` iterations, each a two-loop
    recursion over the last ``history_size`` curvature pairs (skipping a pair
    whose ``y . s <= 1e-10``), with the initial inverse Hessian
    ``(y . s) / (y . y)``; the first iteration ever steps
    ``min(1, 1 / |g|_1) * lr``, the others ``lr``, or what the line search
    finds from there. It stops early when ``max |g| <= tolerance_grad``, when
    the directional derivative, the step or the change of the loss falls
    below ``tolerance_change``, or after ``max_eval`` evaluations. The state
    (history, last direction) carries over to the next :meth:`step`.

    Parameters
    ----------
    params : list of Tensor, dict of name -> Tensor, or a list of one dict
        Leaf tensors that require grad, holding arrays (the line search puts
        their values back in place). One parameter group, as in PyTorch.
    lr : float
        Learning rate (the step, or the first step the line search tries), >= 0.
    max_iter : int
        Iterations per :meth:`step`, >= 1.
    max_eval : int, optional
        Evaluations of the closure per :meth:`step` (default ``max_iter * 5 // 4``).
    tolerance_grad : float
        Stop when the largest gradient entry is at most this, >= 0.
    tolerance_change : float
        Stop when the loss, the step or the directional derivative changes by
        less than this, >= 0.
    history_size : int
        How many curvature pairs to keep, >= 1.
    line_search_fn : None or "strong_wolfe"
        The line search (None: a fixed step of ``lr``).

    Examples
    --------
    >>> import numpy as np
    >>> from reverse import Tensor
    >>> from reverse.optim import LBFGS
    >>> x = Tensor(np.array([-1.2, 1.0]), requires_grad=True)
    >>> opt = LBFGS([x], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2   # Rosenbrock
    ...     loss.backward()
    ...     return loss
    >>> for _ in range(2):
    ...     loss = opt.step(closure)
    >>> np.round(x.value, 4)  # within the default tolerances of the minimum (1, 1)
    array([1., 1.])
    """

    _checks = {"lr": non_negative, "max_iter": at_least_one, "max_eval": at_least_one,
               "tolerance_grad": non_negative, "tolerance_change": non_negative,
               "history_size": at_least_one, "line_search_fn": _line_search_fn}
    _complex = "refused"

    def __init__(self, params: Params, lr: float = 1.0, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None):
        if max_eval is None:
            max_eval = at_least_one("max_iter", max_iter) * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError(f"LBFGS takes one parameter group, as PyTorch's does, got "
                             f"{len(self.param_groups)}")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Refused: L-BFGS treats all its parameters as one vector, with one set of options."""
        raise ValueError("LBFGS takes one parameter group, as PyTorch's does: pass every "
                         "parameter to the constructor")

    def _check_param(self, p: Tensor, name: str) -> None:
        super()._check_param(p, name)
        if not hasattr(type(raw(p.value)), "__setitem__"):
            raise TypeError(f"{name} holds {describe(p.value)}; LBFGS puts parameter values back in "
                            "place between line-search trials, which needs an array: make it "
                            "Tensor(np.asarray(value), requires_grad=True)")

    def _state_shape(self, p: Tensor) -> tuple:
        return (sum(math.prod(shape_of(q.value)) for q, _ in self._parameters()),)

    # -- the parameters as one flat vector ------------------------------------------------
    def _flat_grad(self) -> Any:
        """The gradients (zeros where None) as one new flat array."""
        grads = [zeros(p.value) if g is None else g
                 for (p, _), g in zip(self._parameters(), self._grads())]
        return ops.concatenate([ops.reshape(g, (-1,)) for g in grads])

    def _add(self, t: float, d: Any) -> None:
        """``x += t d``, in place, ``d`` flat."""
        start = 0
        with no_grad():
            for p, _ in self._parameters():
                shape = shape_of(p.value)
                stop = start + math.prod(shape)
                p += t * ops.reshape(d[start:stop], shape)
                start = stop

    def _evaluate(self, closure: Callable[[], Any]) -> tuple[Any, float]:
        """The closure's result (with gradients enabled, as in PyTorch) and the loss as a float."""
        with enable_grad():
            loss = closure()
        return loss, as_float(loss)

    def _evaluate_along(self, closure: Callable[[], Any], d: Any) -> Callable[[float], tuple[float, Any]]:
        """``t -> (loss, flat gradient)`` at ``x + t d``, putting ``x`` back after each trial."""
        params = [p for p, _ in self._parameters()]
        x = [ops.copy(p.value) for p in params]

        def evaluate(t: float) -> tuple[float, Any]:
            self._add(t, d)
            loss = self._evaluate(closure)[1]
            flat_grad = self._flat_grad()
            with no_grad():
                for p, value in zip(params, x):
                    p[...] = value
            return loss, flat_grad
        return evaluate

    # -- the iteration ------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any]) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; return the closure's first result.

        Parameters
        ----------
        closure : callable
            Clears the gradients, computes the loss, calls ``backward`` and
            returns the loss; called several times per step.
        """
        if not callable(closure):
            raise TypeError(f"LBFGS.step needs closure: a function that clears the gradients, "
                            f"computes the loss, calls backward and returns the loss, got "
                            f"{describe(closure)}")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[group["params"][0]]  # all on the first parameter, as PyTorch keeps it
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss, loss = self._evaluate(closure)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if _max_abs(flat_grad) <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, H_diag = [], [], [], 1.0
            else:
                y, s = flat_grad - prev_flat_grad, d * t
                ys = ops.vdot(y, s)
                if ys > 1e-10:  # else the pair would spoil the curvature estimate: skip it
                    if len(old_dirs) == group["history_size"]:
                        del old_dirs[0], old_stps[0], ro[0]
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(float(1.0 / ys))
                    H_diag = float(ys / ops.vdot(y, y))
                d = _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag)
            prev_flat_grad, prev_loss = flat_grad, loss

            t = min(1.0, 1.0 / ops.sum(ops.abs(flat_grad))) * lr if state["n_iter"] == 1 else lr
            gtd = ops.vdot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction (any more)
                break

            if group["line_search_fn"] is not None:
                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    self._evaluate_along(closure, d), d, t, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add(t, d)
                opt_cond = _max_abs(flat_grad) <= tolerance_grad
            else:
                self._add(t, d)
                ls_func_evals = 0
                if n_iter != max_iter:  # no use evaluating after the last step (PyTorch's reason:
                    loss = self._evaluate(closure)[1]  # in a stochastic setting, it is not reused)
                    flat_grad = self._flat_grad()
                    opt_cond = _max_abs(flat_grad) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or _max_abs(d * t) <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break

        state.update(d=d, t=float(t), old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss


def _max_abs(x: Any) -> Any:
    return ops.max(ops.abs(x))


def _two_loop(flat_grad: Any, old_dirs: list, old_stps: list, ro: list, H_diag: float) -> Any:
    """``-H g`` for the L-BFGS inverse Hessian ``H`` of the pairs ``(s, y)`` = ``(old_stps,
    old_dirs)``, with ``ro = 1 / (y . s)`` and the initial ``H = H_diag I``."""
    q = -flat_grad
    al = [None] * len(old_dirs)
    for i in reversed(range(len(old_dirs))):
        al[i] = ops.vdot(old_stps[i], q) * ro[i]
        q = q - al[i] * old_dirs[i]
    r = q * H_diag
    for i in range(len(old_dirs)):
        be_i = ops.vdot(old_dirs[i], r) * ro[i]
        r = r + (al[i] - be_i) * old_stps[i]
    return r
