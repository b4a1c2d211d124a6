"""Sparse derivatives in one room: detection of a pattern by tracing, colourings, and the
compressed evaluation that SparseJacobian and (in mixed) SparseHessian share."""
