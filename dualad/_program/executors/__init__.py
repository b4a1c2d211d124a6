"""Executors that replay a program in another form than the generated NumPy code."""
