"""``dualad.reverse`` and ``dualad.mixed``: the upper layers under dualad's name.

They are the ``reverse`` and ``mixed`` packages themselves (the same module
objects, submodules included), imported only when a user asks for them, so
``dualad`` itself still never imports the layers built on it.
"""

from __future__ import annotations

import importlib
import sys


def become(alias: str, package: str) -> None:
    """Register ``package`` and its loaded submodules under the name ``alias``."""
    importlib.import_module(package)
    for name, loaded in list(sys.modules.items()):
        if name == package or name.startswith(package + "."):
            sys.modules[alias + name[len(package):]] = loaded
