"""The entries of the table, one module per family; importing them registers every entry."""
