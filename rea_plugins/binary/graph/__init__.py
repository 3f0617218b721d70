"""The graph room: who calls and references what. Call graphs and call paths, a call's data flow, import thunks,
calls into the open libraries, and references through pointer arrays."""
