"""The table machinery: the kinds of entry and their registry, VJP helpers, ownership of temporaries."""
