"""Staging: tracing a function into a program, and the transforms that replay
programs (``compile``, ``linearize``).
"""
