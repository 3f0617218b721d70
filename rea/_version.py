"""rea's version, read by the build (pyproject's dynamic version) and at run time without package metadata."""

__version__ = "0.2.0"
