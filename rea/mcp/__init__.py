"""The MCP server over stdio."""
