"""The javascript plugin (work in progress)."""
