"""The Go plugin: a Go binary's build information and function table (rea.operations.golang), on ELF, PE, Mach-O."""

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.golang.tools",)
