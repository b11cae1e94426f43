-- The MCP gateway's tool pins (issue 34, the defence against a server changing a tool under an
-- agent: a "rug pull"). Each upstream tool's definition (name, title, description, input and
-- output schemas, annotations) is hashed when first seen and accepted on that first use; a
-- different definition seen later is held in the `changed_` columns, and the tool is served
-- with its accepted definition and refused when called, until a person accepts the new one.

CREATE TABLE mcp_tool_pins (
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    hash TEXT NOT NULL,
    definition TEXT NOT NULL,
    accepted_by TEXT NOT NULL,
    accepted_at TEXT NOT NULL,
    changed_hash TEXT,
    changed_definition TEXT,
    changed_at TEXT,
    PRIMARY KEY (server, tool)
);
