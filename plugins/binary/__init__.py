"""The binary plugin (work in progress)."""
