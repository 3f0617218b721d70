"""evidence_tools (work in progress)."""
