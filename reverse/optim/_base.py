"""``Optimizer``: parameter groups, per-parameter state, state dicts, and the in-place step."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, ClassVar, Iterable, Union

from dualad import ops
from dualad.interpreter import (
    SCALAR_TYPES,
    describe,
    dtype_of,
    is_complex,
    is_operand,
    namespace_of,
    raw,
    shape_of,
)
from reverse._grad_mode import enable_grad, no_grad
from reverse._tensor import Tensor

__all__ = ["Optimizer", "Params", "as_float"]

# What an optimizer takes as params: Tensors, named Tensors, or parameter groups.
Params = Union[Iterable[Tensor], dict[str, Tensor], Iterable[dict[str, Any]]]
# Set on a group by the learning-rate schedulers (PyTorch's names), so a group may carry them.
SCHEDULER_KEYS = ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")


class Optimizer:
    """Base class: parameter groups with their options, per-parameter state, the in-place step.

    As in PyTorch, ``param_groups`` is a list of dicts, each holding its
    parameters under ``"params"`` and its own value of every option (``"lr"``,
    ...): changing ``opt.param_groups[0]["lr"]`` changes the next step, which
    is how the learning-rate schedulers work. ``state`` holds one dict per
    parameter, in the order of the groups (the numbering of :meth:`state_dict`);
    its arrays have the parameter's backend and dtype.

    Parameters
    ----------
    params : list of Tensor, dict of name -> Tensor, or list of dict
        Leaf tensors that require grad; or parameter groups: dicts with the
        group's parameters under ``"params"`` (a list or dict of Tensors, or
        one Tensor) and any of the options to set for that group.
    defaults : dict
        Every option with its value for the groups that do not set it.

    Subclasses list the check of each option in ``_checks`` (see
    ``reverse.optim._options``) and implement ``_update(x, g, state, group)``:
    from the parameter's value ``x``, its gradient ``g`` (raw arrays or
    floats), its state dict (``state["step"]`` counts from 1) and its group,
    the amount to subtract from ``x``. ``step`` negates ``g`` first for a group
    with ``maximize``; a rule that is not linear in ``g`` sets ``_complex =
    "pairs"`` to see a complex parameter as PyTorch does, as pairs of reals.

    Examples
    --------
    >>> from reverse import Tensor
    >>> from reverse.optim import Optimizer
    >>> class SignDescent(Optimizer):
    ...     def __init__(self, params, lr=0.5):
    ...         super().__init__(params, {"lr": lr})
    ...     def _update(self, x, g, state, group):
    ...         return group["lr"] * (1.0 if g > 0 else -1.0 if g < 0 else 0.0)
    >>> w, b = Tensor(2.0, requires_grad=True), Tensor(-1.0, requires_grad=True)
    >>> opt = SignDescent([{"params": [w]}, {"params": [b], "lr": 0.25}])
    >>> (w * w + b * b).backward(); opt.step()
    >>> w.item(), b.item()
    (1.5, -0.75)
    """

    # option -> check(name, value) returning the value to keep; options not listed are kept as given
    _checks: ClassVar[dict[str, Callable[[str, Any], Any]]] = {}
    # What the rule does with a complex parameter: "as_is" (a rule linear in the gradient, as
    # SGD's, steps it as a complex number), "pairs" (PyTorch's view_as_real: each complex entry
    # is two real ones, so squares and square roots are taken part by part; every state entry
    # but "step" is then an array of the parameter's shape, kept complex as PyTorch keeps it),
    # or "refused".
    _complex: ClassVar[str] = "as_is"

    def __init__(self, params: Params, defaults: dict[str, Any]):
        self.defaults: dict[str, Any] = dict(defaults)  # the known options, for the check below
        self.defaults = self._checked_options(self.defaults, "")
        self.param_groups: list[dict[str, Any]] = []
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)  # PyTorch's: by parameter
        self._names: list[str] = []  # each parameter as the user named it, in state's order
        if isinstance(params, Tensor):
            raise TypeError("params must be a list or dict of Tensors, or a list of parameter "
                            "groups (dicts), got a single Tensor; write [param]")
        if isinstance(params, dict):
            self._add_group({"params": params}, "", "params")
            return
        params = list(params)
        if not params:
            raise ValueError("params is empty: the optimizer has nothing to update")
        if not isinstance(params[0], dict):
            self._add_group({"params": params}, "", "params")
            return
        for i, group in enumerate(params):
            self._add_group(group, f"params[{i}]", f"params[{i}]['params']")

    # -- parameter groups -----------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the others from ``defaults``).

        Parameters
        ----------
        param_group : dict
            ``"params"`` (a list or dict of Tensors, or one Tensor) and any options.

        Examples
        --------
        >>> from reverse import Tensor
        >>> from reverse.optim import SGD
        >>> w, head = Tensor(1.0, requires_grad=True), Tensor(1.0, requires_grad=True)
        >>> opt = SGD([w], lr=0.1)
        >>> opt.add_param_group({"params": [head], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        self._add_group(param_group, "param_group", "param_group['params']")

    def _add_group(self, group: Any, where: str, params_where: str) -> None:
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{where or 'a parameter group'} must be a dict with the group's "
                            f"parameters under 'params', got {describe(group)}")
        params, names = _named_params(group["params"], params_where)
        seen = {id(p): name for (p, _), name in zip(self._parameters(), self._names)}
        for p, name in zip(params, names):
            if not isinstance(p, Tensor):
                raise TypeError(f"{name} must be a reverse.Tensor, got {type(p).__name__}")
            if not p.requires_grad or not p.is_leaf:
                raise ValueError(f"{name} must be a leaf Tensor that requires grad "
                                 f"(requires_grad={p.requires_grad}, is_leaf={p.is_leaf})")
            if id(p) in seen:
                raise ValueError(f"{name} is the same Tensor as {seen[id(p)]}; a parameter "
                                 "belongs to one group, once")
            self._check_param(p, name)
            seen[id(p)] = name
        options = {k: v for k, v in group.items() if k != "params"}
        checked = self._checked_options({**self.defaults, **options}, where)
        self.param_groups.append({"params": params, **checked})
        self._names.extend(names)

    def _check_param(self, p: Tensor, name: str) -> None:
        """Refuse a parameter this optimizer cannot update (a hook)."""
        if self._complex == "refused" and is_complex(p.value):
            raise TypeError(f"{name} is complex ({dtype_of(raw(p.value))}); {type(self).__name__} "
                            "updates real parameters only (SGD, Adam, AdamW, RMSprop and Adagrad "
                            "take complex ones)")

    def _checked_options(self, options: dict[str, Any], where: str) -> dict[str, Any]:
        """``options`` checked one by one and together; ``where`` names the group."""
        unknown = sorted(set(options) - set(self.defaults) - set(SCHEDULER_KEYS), key=str)
        if unknown:
            raise ValueError(f"{where}: unknown option(s) "
                             f"{', '.join(map(repr, unknown))}; {type(self).__name__} takes "
                             f"{', '.join(map(repr, self.defaults))}")
        checked = {}
        for key, value in options.items():
            check = self._checks.get(key)
            checked[key] = value if check is None else check(f"{where}[{key!r}]" if where else key, value)
        self._check_together(checked, where)
        return checked

    def _check_together(self, options: dict[str, Any], where: str) -> None:
        """Refuse options that are fine alone but not together (a hook)."""

    def _parameters(self) -> list[tuple[Tensor, dict[str, Any]]]:
        """Every parameter with its group, in the order of the groups (``state_dict``'s numbering)."""
        return [(p, group) for group in self.param_groups for p in group["params"]]

    # -- stepping ---------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (``None`` by default, or zero arrays)."""
        for p, _ in self._parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = raw(p.grad) * 0.0

    def _grads(self) -> list[Any]:
        """Every parameter's gradient as a raw array (or None), checked before any is used."""
        grads = []
        for (p, _), name in zip(self._parameters(), self._names):
            g = p.grad.value if isinstance(p.grad, Tensor) else p.grad
            if g is not None and (not is_operand(g) or shape_of(g) != shape_of(p.value)):
                raise ValueError(f"{name}.grad must be an array of the parameter's shape "
                                 f"{shape_of(p.value)}, got {describe(g)}")
            grads.append(g)
        return grads

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a ``.grad`` in place (under ``no_grad``).

        Parameters
        ----------
        closure : callable, optional
            Called first (with gradients enabled) to recompute the loss and the
            gradients; its result is returned, as in PyTorch.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        grads = self._grads()
        with no_grad():
            for (p, group), g in zip(self._parameters(), grads):
                if g is not None:
                    state = self.state[p]
                    state["step"] = state.get("step", 0) + 1
                    if group.get("maximize"):  # PyTorch's maximize: the rule on -g, from the start
                        g = -g
                    p -= self._update_of(p.value, g, state, group)
        return loss

    def _update_of(self, x: Any, g: Any, state: dict, group: dict) -> Any:
        """``_update``, through PyTorch's real view of a complex parameter where the rule asks."""
        if self._complex != "pairs" or not is_complex(x):
            return self._update(x, g, state, group)
        pairs = {k: v if k == "step" else _as_pairs(v) for k, v in state.items()}
        delta = self._update(_as_pairs(x), _as_pairs(g), pairs, group)
        state.update({k: v if k == "step" else _from_pairs(v, x) for k, v in pairs.items()})
        return _from_pairs(delta, x)

    def _update(self, x: Any, g: Any, state: dict, group: dict) -> Any:
        raise NotImplementedError

    # -- state dicts --------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """A copy of the state and the options, as PyTorch lays them out.

        ``{"state": {i: {...}}, "param_groups": [{..., "params": [i, ...]}]}``,
        with the parameters numbered in the order of the groups; the arrays
        are copies, so stepping on does not change a state dict already taken.

        Examples
        --------
        >>> from reverse import Tensor
        >>> from reverse.optim import SGD
        >>> w = Tensor(1.0, requires_grad=True)
        >>> opt = SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).backward(); opt.step()
        >>> sd = opt.state_dict()
        >>> sd["state"], sd["param_groups"][0]["params"]
        ({0: {'step': 1, 'momentum_buffer': 2.0}}, [0])
        """
        groups, start = [], 0
        for group in self.param_groups:
            stop = start + len(group["params"])
            groups.append({**{k: v for k, v in group.items() if k != "params"},
                           "params": list(range(start, stop))})
            start = stop
        params = [p for p, _ in self._parameters()]
        return {"state": {i: _copied(self.state[p]) for i, p in enumerate(params) if self.state.get(p)},
                "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the state and options of :meth:`state_dict`; stepping on continues identically.

        The groups must match this optimizer's in number and size. Options are
        checked as the constructor checks them; state arrays must have the
        shape of their parameter and its backend, and are cast to its dtype (as
        PyTorch casts them).

        Examples
        --------
        >>> from reverse import Tensor
        >>> from reverse.optim import Adam
        >>> w = Tensor(1.0, requires_grad=True)
        >>> opt = Adam([w], lr=0.1)
        >>> (w * w).backward(); opt.step()
        >>> v = Tensor(0.9, requires_grad=True)
        >>> fresh = Adam([v])
        >>> fresh.load_state_dict(opt.state_dict())
        >>> fresh.param_groups[0]["lr"], fresh.state[v]["step"]
        (0.1, 1)
        """
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            raise ValueError(f"state_dict must be a dict with keys 'state' and 'param_groups' (from "
                             f"Optimizer.state_dict()), got {describe(state_dict)}")
        saved = state_dict["param_groups"]
        if not isinstance(saved, (list, tuple)) or len(saved) != len(self.param_groups):
            count = len(saved) if isinstance(saved, (list, tuple)) else describe(saved)
            raise ValueError(f"state_dict['param_groups'] must hold {len(self.param_groups)} "
                             f"group(s), as this optimizer has, got {count}")
        if not isinstance(state_dict["state"], dict):
            raise ValueError(f"state_dict['state'] must be a dict of parameter number -> state, "
                             f"got {describe(state_dict['state'])}")
        groups, index = [], {}  # index: saved number -> position in state's order
        for i, (group, old) in enumerate(zip(self.param_groups, saved)):
            where = f"state_dict['param_groups'][{i}]"
            if not isinstance(old, dict) or len(old.get("params", ())) != len(group["params"]):
                size = len(old["params"]) if isinstance(old, dict) and "params" in old else describe(old)
                raise ValueError(f"{where} must hold {len(group['params'])} parameter(s), as "
                                 f"param_groups[{i}] of this optimizer does, got {size}")
            options = {k: v for k, v in old.items() if k != "params"}
            groups.append({"params": group["params"], **self._checked_options(options, where)})
            index.update({n: len(index) + j for j, n in enumerate(old["params"])})
        params = [p for p, _ in self._parameters()]
        states: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for n, s in state_dict["state"].items():
            if n not in index:
                raise ValueError(f"state_dict['state'] has an entry {n!r} that no group of "
                                 f"state_dict['param_groups'] lists")
            j = index[n]
            states[params[j]] = {k: _loaded(v, params[j], self._state_shape(params[j]),
                                    f"state_dict['state'][{n!r}][{k!r}]") for k, v in s.items()}
        self.param_groups, self.state = groups, states

    def _state_shape(self, p: Tensor) -> tuple:
        """The shape of the arrays in ``p``'s state (the parameter's own here)."""
        return shape_of(p.value)

    def __repr__(self) -> str:
        lrs = ", ".join(str(g.get("lr")) for g in self.param_groups)
        return (f"{type(self).__name__}({len(self.param_groups)} group(s), "
                f"{len(self._names)} parameter(s), lr={lrs})")


def as_float(value: Any) -> float:
    """A loss or metric (a number, a 0-d array, or a Tensor, gradient or not) as a Python float."""
    return value.item() if isinstance(value, Tensor) else float(value)


def _named_params(params: Any, where: str) -> tuple[list, list[str]]:
    """A group's parameters as a list, and the name of each as the user wrote it."""
    if isinstance(params, Tensor):
        return [params], [where]
    if isinstance(params, dict):
        return list(params.values()), [f"{where}[{k!r}]" for k in params]
    if isinstance(params, (str, bytes)) or not hasattr(params, "__iter__"):
        raise TypeError(f"{where} must be a list or dict of Tensors, got {describe(params)}")
    params = list(params)
    return params, [f"{where}[{i}]" for i in range(len(params))]


def _as_pairs(z: Any) -> Any:
    """PyTorch's ``view_as_real``: a complex array (or number) as a real array whose last
    axis holds each entry's real and imaginary parts."""
    return ops.stack([ops.real(z), ops.imag(z)], axis=-1)


def _from_pairs(pairs: Any, like: Any) -> Any:
    """The complex array (or number, as ``like`` is) whose real view is ``pairs``."""
    z = pairs[..., 0] + 1j * pairs[..., 1]
    return complex(z) if type(like) is complex else z


def _copied(value: Any) -> Any:
    """``value`` with every array copied, through dicts and lists (numbers are immutable)."""
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    if value is None or type(value) in SCALAR_TYPES:
        return value
    return ops.copy(value)


def _loaded(value: Any, p: Tensor, shape: tuple, where: str) -> Any:
    """A saved state entry for parameter ``p``: arrays (also inside lists) checked to have
    ``shape`` and ``p``'s backend, and copied in ``p``'s dtype."""
    if isinstance(value, list):
        return [_loaded(v, p, shape, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or type(value) in SCALAR_TYPES:
        return value
    if not is_operand(value) or shape_of(value) != shape:
        raise ValueError(f"{where} must be an array of shape {shape}, got {describe(value)}")
    x = raw(p.value)
    try:
        namespace_of([x, value])
    except TypeError as err:
        raise TypeError(f"{where} is {describe(value)} from another array library than its "
                        f"parameter's ({type(x).__name__}): convert it first") from err
    if type(x) in SCALAR_TYPES or dtype_of(value) == dtype_of(x):
        return ops.copy(value)
    return ops.astype(value, dtype_of(x))
