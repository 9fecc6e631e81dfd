"""nika's MCP server (stdio) and the tools it exposes to agents."""
