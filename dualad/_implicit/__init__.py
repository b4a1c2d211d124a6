"""Solutions as entries of the table: ``custom_linear_solve`` and ``custom_root``."""
