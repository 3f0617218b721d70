"""The shared core of the binary tool family, below every room: input-schema pieces and the one way to run an
operation (``schema``), the analyst's annotations and demangled names in every result (``annotate``,
``demangle``), the result shapes (``shapes``), the load image's regions (``regions``) and operand numbers
(``operands``). It declares no tool."""
