//! The stdio front's framing. MCP's stdio transport is one JSON-RPC message a line; rmcp drops
//! a line it cannot read, and the client waits for an answer that never comes. Here a line
//! that is not JSON is answered with JSON-RPC's parse error (-32700, `id: null`), and JSON
//! that is not a request, a notification or a response with JSON-RPC's invalid request
//! (-32600, with its id when it has one), as the specification asks; every other line goes on
//! to rmcp. What rmcp writes and these answers go out one whole line at a time.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The largest message buffered between the client's stream and rmcp.
const PIPE_BYTES: usize = 4 << 20;

/// Puts the framing between `input`/`output` (the process's stdin and stdout) and rmcp: the
/// pair returned is the transport rmcp serves on.
pub fn framed<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_reads, mut to_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, rmcp_writes) = tokio::io::duplex(PIPE_BYTES);
    let (out, mut lines_out) = mpsc::unbounded_channel::<String>();
    let answers = out.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            match refusal(&line) {
                Some(answer) => {
                    let _ = answers.send(answer.to_string());
                }
                None => {
                    if to_rmcp.write_all(line.as_bytes()).await.is_err()
                        || to_rmcp.write_all(b"\n").await.is_err()
                    {
                        break;
                    }
                }
            }
        }
        // The client closed its side: so does rmcp's.
        let _ = to_rmcp.shutdown().await;
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(from_rmcp).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if out.send(line).is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = lines_out.recv().await {
            if output.write_all(line.as_bytes()).await.is_err()
                || output.write_all(b"\n").await.is_err()
                || output.flush().await.is_err()
            {
                break;
            }
        }
    });
    (rmcp_reads, rmcp_writes)
}

/// The JSON-RPC error a line gets instead of going on to rmcp, if any.
pub(crate) fn refusal(line: &str) -> Option<Value> {
    let error = |code: i32, message: &str, id: Value| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Some(error(
            -32700,
            "parse error: a line is one JSON-RPC message in JSON",
            Value::Null,
        ));
    };
    let Value::Object(message) = &value else {
        return Some(error(
            -32600,
            "invalid request: a message is a JSON object (batches are not part of MCP)",
            Value::Null,
        ));
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::Null | Value::String(_) | Value::Number(_));
    let versioned = message.get("jsonrpc") == Some(&json!("2.0"));
    let method = message.get("method").map(Value::is_string);
    let response = message.contains_key("result") || message.contains_key("error");
    if !versioned || !id_ok || method == Some(false) || (method.is_none() && !response) {
        let id = if id_ok { id } else { Value::Null };
        return Some(error(
            -32600,
            "invalid request: a JSON-RPC 2.0 message has `\"jsonrpc\": \"2.0\"` and a `method` (or is a response)",
            id,
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_json_rpc_gets_its_error_and_the_rest_goes_on() {
        let code = |line: &str| refusal(line).map(|v| v["error"]["code"].clone());
        assert_eq!(code("not json"), Some(json!(-32700)));
        assert_eq!(code("{\"broken\": "), Some(json!(-32700)));
        assert_eq!(code("[1, 2]"), Some(json!(-32600)));
        assert_eq!(
            code("{\"id\": 3, \"method\": \"ping\"}"),
            Some(json!(-32600))
        );
        assert_eq!(
            refusal("{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": 5}").map(|v| v["id"].clone()),
            Some(json!(7))
        );
        assert_eq!(
            code("{\"jsonrpc\": \"2.0\", \"id\": {\"x\": 1}, \"method\": \"ping\"}"),
            Some(json!(-32600))
        );
        assert_eq!(
            code("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}"),
            None
        );
        assert_eq!(
            code("{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}"),
            None
        );
        assert_eq!(
            code("{\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": {}}"),
            None
        );
    }
}
