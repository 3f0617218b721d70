"""The firmware plugin: an image's regions and its extraction with unblob, owned and sandboxed."""

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.firmware.tools",)
