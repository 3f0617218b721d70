"""What a WebAssembly module is recognised by, and the largest one read (shared by the provider and the tools)."""

MAGIC = b"\0asm"
MAX_FILE_BYTES = 64 << 20
