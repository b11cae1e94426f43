//! The MCP gateway (issue 34): an agent's MCP client talks to Tollgate as it would to its
//! servers. A session opens a run; the upstream servers' tools are listed as `SERVER.TOOL`,
//! those the run's envelopes deny outright hidden; every `tools/call` is decided through the
//! runtime like a `/v1` tool call (the same receipt, proof, rate limits and approvals) before
//! the upstream sees it; results pass the data rules and are recorded as tool results.
//!
//! - `config`: the configuration file (the upstream servers, the run a session opens), checked
//!   with line, column and help like envelopes;
//! - `upstream`: the connections to upstream servers (children with only the environment
//!   named, in a process group of their own);
//! - `front`: the MCP server the client talks to (`rmcp::ServerHandler`), one per session;
//!   `tollgate mcp proxy` serves it on stdio, through `stdio`'s framing (a line that is not
//!   JSON-RPC gets JSON-RPC's error instead of silence);
//! - `session`: the same front over streamable HTTP at `/v1/mcp` on `tollgate serve`, a
//!   session bound at `initialize` to the credential that opened it and to its run;
//! - `pins`: each tool's definition pinned on first use, a changed one refused until accepted;
//! - `relay`: the session's side towards its client, shared with the upstreams: decisions with
//!   their approval waits, progress passed on, sampling and elicitation decided as calls;
//! - `front::context`: resources and prompts decided as context items.

pub mod config;
pub mod front;
pub mod pins;
pub mod relay;
pub mod session;
pub mod stdio;
pub mod upstream;
