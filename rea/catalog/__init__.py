"""The tool catalog: tool definitions as data, schema projections, and the generated catalog document."""
