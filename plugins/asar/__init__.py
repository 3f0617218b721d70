"""The asar plugin (work in progress)."""
