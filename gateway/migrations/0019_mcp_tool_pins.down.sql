DROP TABLE mcp_tool_pins;
