"""discovery (work in progress)."""
