"""The documentation builds with warnings as errors; the guides' examples run as
doctests in the ordinary test run (``--doctest-glob``), so neither can rot."""

import pathlib

from sphinx.cmd.build import build_main

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def test_the_documentation_builds_without_a_warning(tmp_path):
    status = build_main(["-W", "--keep-going", "-E", "-q", "-b", "html",
                         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")])
    assert status == 0, "sphinx-build reported warnings (printed above)"
    assert (tmp_path / "html" / "api" / "mixed.html").is_file()
