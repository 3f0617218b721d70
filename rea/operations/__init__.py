"""The native operations (docs/native-operations.md) answered from engine-neutral records.

A provider whose engine can describe a program as records (``records``: documents, segments, procedures,
instructions, references, strings, names) gets every operation's normalized shape, page and selector
from ``answers`` instead of writing them again. The Ghidra and Hopper plugins use it.
"""
