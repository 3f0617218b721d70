"""The runtime plugin: JavaScript runtimes (Node, Electron) observed passively through the V8 inspector, and their
loaded scripts joined to the static application graph."""

TOOL_MODULES = ("rea_plugins.runtime.tools",)
