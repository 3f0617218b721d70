"""The crash plugin: a recorded crash (an ELF core file) read with LIEF, its code located through the providers."""

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.crash.tools",)
