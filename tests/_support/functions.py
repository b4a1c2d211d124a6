"""Custom ``reverse.Function`` subclasses that several reverse-mode test modules use."""

from reverse import Function


class Cube(Function):
    """x**3, with its input saved."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3.0 * x ** 2 * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3.0 * x ** 2 * t
