"""The native plugin (work in progress)."""
