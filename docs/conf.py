"""Sphinx configuration: the API reference comes from the docstrings (numpydoc).

Build with ``python -m sphinx -W -b html docs docs/_build/html`` (warnings are
errors; ``tests/test_docs.py`` runs the same build in the test suite).
"""

project = "dualad"
author = "the dualad developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc", "sphinx.ext.intersphinx"]
autosummary_generate = True
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
intersphinx_mapping = {}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []
nitpicky = False
