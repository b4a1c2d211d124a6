"""Batching: the ``Batched`` value type and ``vmap``."""
