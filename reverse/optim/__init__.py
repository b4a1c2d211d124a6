"""First-order optimizers over ``Tensor`` parameters: ``SGD``, ``Adam``, ``AdamW``.

The update rules are those of the PyTorch documentation (``torch.optim``).
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
from reverse.optim._lbfgs import LBFGS
from reverse.optim._rmsprop import RMSprop
from reverse.optim._sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "LBFGS", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
