"""Programs: the traced representation, its passes and its executors."""
