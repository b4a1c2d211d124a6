"""The lowest floor: ``bind`` and levels, array backends, shapes, pytrees, checks
and the calling convention. Imports nothing else of dualad.
"""
