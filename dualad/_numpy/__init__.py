"""NumPy's functions written with the table's entries (composites), and the
array-like protocol of the value types.
"""
