"""The EVM plugin: a contract's interface and storage layout from its bytecode, with evmole."""

TOOL_MODULES: tuple[str, ...] = ("rea_plugins.evm.tools",)
