"""Forward mode: ``Dual``, ``HyperDual`` and the transforms built on them
(``jvp``, ``jacfwd``, ``hessian``).
"""
