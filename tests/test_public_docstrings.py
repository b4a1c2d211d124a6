"""Every public name of the packages has a docstring, and every public function
and class has an ``Examples`` section (which ``--doctest-modules`` runs; the
examples of objects the module doctests cannot reach, such as
``functools.partial`` instances, are run here).

Public means listed in a package's ``__all__``: ``dualad``, ``reverse``,
``reverse.optim`` and ``reverse.optim.lr_scheduler``. A name may be exempted
only in ``EXEMPT``, with the reason."""

from __future__ import annotations

import doctest
import importlib
import inspect
import re

import pytest

PACKAGES = ["dualad", "dualad.testing", "reverse", "reverse.optim", "reverse.optim.lr_scheduler", "mixed",
            "mixed.scipy"]

# "package.name": why it has no Examples section (none today).
EXEMPT: dict[str, str] = {}

EXAMPLES = re.compile(r"^Examples\n-{3,}$", flags=re.M)


def public_names():
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            yield f"{package}.{name}", getattr(module, name)


def own_docstring(obj) -> str | None:
    """``obj``'s docstring, not one it inherits from its type (a partial's, an instance's)."""
    doc = obj.__doc__
    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)) \
            and doc == type(obj).__doc__:
        return None
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else None


NAMES = dict(public_names())


@pytest.mark.parametrize("qualname", sorted(NAMES))
def test_public_name_has_a_docstring_with_examples(qualname):
    obj = NAMES[qualname]
    doc = own_docstring(obj)
    assert doc is not None, f"{qualname} has no docstring"
    if qualname in EXEMPT or inspect.ismodule(obj):
        return
    assert EXAMPLES.search(doc), f"{qualname}'s docstring has no Examples section"


@pytest.mark.parametrize("qualname", sorted(q for q, obj in NAMES.items()
                                            if not (inspect.isclass(obj) or inspect.isroutine(obj)
                                                    or inspect.ismodule(obj)) and own_docstring(obj)))
def test_examples_the_module_doctests_cannot_reach_run(qualname):
    obj = NAMES[qualname]
    tests = doctest.DocTestFinder(recurse=False).find(obj, qualname, globs={})
    assert sum(len(test.examples) for test in tests) > 0, f"{qualname}: no examples found"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"{qualname}'s examples failed (printed above)"


def test_exemptions_are_still_needed():
    for qualname, reason in EXEMPT.items():
        assert reason, f"{qualname} is exempt without a reason"
        assert qualname in NAMES, f"{qualname} is exempt but no longer public"
        assert not EXAMPLES.search(own_docstring(NAMES[qualname]) or ""), \
            f"{qualname} has Examples now: drop its exemption"
