"""projections (work in progress)."""
