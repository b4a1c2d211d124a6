"""Optimizers over ``Tensor`` parameters, in PyTorch's vocabulary (``torch.optim``).

``SGD``, ``Adam``, ``AdamW`` (with ``amsgrad``), ``RMSprop``, ``Adagrad`` and
``LBFGS`` (with a strong-Wolfe line search) follow the update rules of the
PyTorch documentation, with its parameter groups (``param_groups``,
``add_param_group``), ``state_dict``/``load_state_dict`` and ``step(closure)``;
:mod:`reverse.optim.lr_scheduler` has its learning-rate schedules, and
:func:`clip_grad_norm_` and :func:`clip_grad_value_` its gradient clipping
(``torch.nn.utils`` in PyTorch: here beside the optimizers that read the
clipped ``.grad``, since ``reverse`` has no ``nn`` package). Every optimizer
but L-BFGS takes PyTorch's ``maximize=True`` (ascend instead).

Complex parameters step as in PyTorch: SGD's rule, linear in the gradient,
steps them as complex numbers; Adam, AdamW, RMSprop and Adagrad take each
complex entry as a pair of reals (PyTorch's ``view_as_real``), so their
squares and square roots are taken part by part, and their state stays
complex, of the parameter's shape. L-BFGS refuses them.

``step()`` reads each parameter's ``.grad`` and updates the parameter in
place under ``no_grad()``: its array is modified (``Tensor.__isub__``) and
its version counter bumped, so a graph that saved the old value refuses to
run backward instead of using the new one. The optimizer state (momentum
buffers, moment estimates) is kept as raw arrays of the parameter's backend
and dtype, so nothing is recorded and nothing leaves the device.

Examples
--------
>>> import numpy as np
>>> from reverse import Tensor
>>> from reverse.optim import SGD
>>> w = Tensor(np.array([1.0, -2.0]), requires_grad=True)
>>> opt = SGD([w], lr=0.25)
>>> for _ in range(3):
...     opt.zero_grad()
...     (w ** 2).sum().backward()
...     opt.step()
>>> w.value
array([ 0.125, -0.25 ])
"""


from reverse.optim import lr_scheduler
from reverse.optim._adagrad import Adagrad
from reverse.optim._adam import Adam, AdamW
from reverse.optim._base import Optimizer
from reverse.optim._clip import clip_grad_norm_, clip_grad_value_
from reverse.optim._lbfgs import LBFGS
from reverse.optim._rmsprop import RMSprop
from reverse.optim._sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "LBFGS", "Optimizer", "RMSprop", "SGD", "clip_grad_norm_",
           "clip_grad_value_", "lr_scheduler"]
