"""The notebook room: what the analyst writes down. Names, comments, bookmarks and function annotations, and the
target's C types, prototypes and typed data, kept in the kernel's annotation store for every provider. Its tools are
the binary family's, advertised as their own toolset (``notebook``)."""
