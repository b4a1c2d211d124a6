"""JAX's names at the top of ``dualad`` (issue 23 §3): ``jit`` is ``compile``, and the
transforms that live in the layers above are named where they are looked for."""

import builtins

import numpy as np
import pytest

import dualad


def test_jit_is_compile():
    assert dualad.jit is dualad.compile
    f = dualad.jit(lambda x: np.sin(x) * x)
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(f(x), np.sin(x) * x)
    np.testing.assert_allclose(f(x + 1.0), np.sin(x + 1.0) * (x + 1.0))


def test_star_import_keeps_the_builtin_compile():
    assert "compile" not in dualad.__all__
    assert "jit" in dualad.__all__
    namespace = {}
    exec("from dualad import *", namespace)
    assert "compile" not in namespace
    assert namespace["jit"] is dualad.compile
    code = namespace.get("compile", builtins.compile)("1 + 1", "<test>", "eval")
    assert eval(code) == 2


@pytest.mark.parametrize("name, where", [("grad", "reverse.grad"), ("hvp", "mixed.hvp"),
                                         ("value_and_grad", "reverse.value_and_grad"),
                                         ("jacrev", "reverse.jacrev"), ("jacobian", "reverse.jacobian"),
                                         ("vjp", "reverse.vjp")])
def test_reverse_mode_names_say_where_they_live(name, where):
    with pytest.raises(AttributeError, match=rf"no attribute '{name}'.*use {where.replace('.', '[.]')}"):
        getattr(dualad, name)
    assert not hasattr(dualad, name)


def test_an_unknown_name_is_a_plain_attribute_error():
    with pytest.raises(AttributeError, match=r"^module 'dualad' has no attribute 'nope'$"):
        _ = dualad.nope
