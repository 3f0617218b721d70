"""The angr plugin (work in progress)."""
