"""refenv for assistants: the MCP server (`server`, on the official `mcp` SDK) and the answers its tools give
(`answers`: refenv's own functions, their results redacted)."""
