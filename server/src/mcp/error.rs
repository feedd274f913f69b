//! Why an MCP server could not be used (the client's and its calls' one error).

use std::time::Duration;

/// Why an MCP server could not be used. `Display` is for logs.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("the MCP server cannot be reached: {0}")]
    Unreachable(String),
    #[error("the MCP server refused us ({0})")]
    Unauthorized(u16),
    #[error("not an MCP server, or its handshake failed: {0}")]
    Protocol(String),
    #[error("the MCP server did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the MCP server's tool failed: {0}")]
    Failed(String),
    /// A header the host gave cannot be sent (never its value).
    #[error("{0}")]
    Headers(String),
}

impl McpError {
    /// The machine code of the error (`mcp_unreachable`, …).
    pub fn code(&self) -> &'static str {
        match self {
            McpError::Unreachable(_) => "mcp_unreachable",
            McpError::Unauthorized(_) => "mcp_unauthorized",
            McpError::Protocol(_) => "mcp_protocol",
            McpError::Timeout(_) => "mcp_timeout",
            McpError::Failed(_) => "mcp_failed",
            McpError::Headers(_) => "mcp_headers",
        }
    }
}
