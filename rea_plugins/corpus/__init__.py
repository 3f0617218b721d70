"""The corpus plugin: the same per-binary analysis over thousands of files, on Dask, into a SQLite index."""

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.corpus.tools",)
