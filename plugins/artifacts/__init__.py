"""The artifacts plugin (work in progress)."""
