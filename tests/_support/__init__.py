"""Helpers shared by the test modules (importable as ``_support``)."""
