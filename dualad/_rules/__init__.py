"""The primitive table, one module per family; importing it registers every entry."""
