//! A guard in front of tower-lsp-server's input: it forwards only well-formed JSON-RPC frames.
//!
//! tower-lsp-server (0.23) stops reading its input after the first frame it cannot decode
//! (tokio-util's `FramedRead` ends the stream after a decoder error), so one malformed message —
//! bad JSON, a JSON value that is not a JSON-RPC message, a bad header — would leave the editor
//! with a dead server. Here malformed frames are logged and dropped; everything else is passed on
//! byte-for-byte in a normalized frame.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Larger frames are skipped (an editor never sends such a message; a runaway length would
/// otherwise make the server buffer without end).
const MAX_FRAME: usize = 256 << 20;

/// Whether tower-lsp-server can decode this value as a request, notification or response.
pub fn is_jsonrpc_message(v: &Value) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return false;
    }
    let id_ok = match obj.get("id") {
        None => true,
        Some(id) => id.is_i64() || id.is_string() || id.is_null(),
    };
    let is_request = obj.get("method").is_some_and(Value::is_string);
    let is_response =
        obj.contains_key("id") && (obj.contains_key("result") || obj.contains_key("error"));
    id_ok && (is_request || is_response)
}

/// Copies frames from `input` to `output`, dropping malformed ones, until `input` ends.
pub async fn forward_valid_frames<I, O>(input: I, mut output: O)
where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    loop {
        // Headers: lines up to an empty line; only Content-Length matters.
        let mut length: Option<usize> = None;
        let mut saw_header = false;
        loop {
            let mut line = Vec::new();
            match input.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&line);
            let line = line.trim();
            if line.is_empty() {
                if saw_header {
                    break;
                }
                continue;
            }
            saw_header = true;
            if let Some((name, value)) = line.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok();
                }
            }
        }
        let Some(length) = length else {
            tracing::warn!("dropped a message without a valid Content-Length header");
            continue;
        };
        if length > MAX_FRAME {
            tracing::warn!("dropped a message of {length} bytes");
            let mut skip = (&mut input).take(length as u64);
            if tokio::io::copy(&mut skip, &mut tokio::io::sink())
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        let mut body = vec![0; length];
        if input.read_exact(&mut body).await.is_err() {
            return;
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) if is_jsonrpc_message(&v) => {
                let header = format!("Content-Length: {}\r\n\r\n", body.len());
                if output.write_all(header.as_bytes()).await.is_err()
                    || output.write_all(&body).await.is_err()
                {
                    return;
                }
                if output.flush().await.is_err() {
                    return;
                }
            }
            Ok(_) => tracing::warn!("dropped a JSON value that is not a JSON-RPC message"),
            Err(err) => tracing::warn!("dropped a message that is not JSON: {err}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_shapes() {
        assert!(is_jsonrpc_message(
            &json!({"jsonrpc": "2.0", "method": "x"})
        ));
        assert!(is_jsonrpc_message(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {}})
        ));
        assert!(is_jsonrpc_message(
            &json!({"jsonrpc": "2.0", "id": "a", "result": null})
        ));
        assert!(!is_jsonrpc_message(
            &json!({"jsonrpc": "2.0", "id": 1.5, "method": "x"})
        ));
        assert!(!is_jsonrpc_message(&json!({"method": "x"})));
        assert!(!is_jsonrpc_message(&json!([1, 2])));
        assert!(!is_jsonrpc_message(&json!({"jsonrpc": "2.0", "id": 1})));
    }

    #[tokio::test]
    async fn malformed_frames_are_dropped_and_the_rest_passes() {
        let good = r#"{"jsonrpc":"2.0","method":"a"}"#;
        let input = format!(
            "Content-Length: 5\r\n\r\n{{bad}}garbage line\r\n\r\nContent-Length: 3\r\nContent-Type: x\r\n\r\n[1]Content-Length: {}\r\n\r\n{}",
            good.len(),
            good
        );
        let mut out = Vec::new();
        forward_valid_frames(input.as_bytes(), &mut out).await;
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("Content-Length: {}\r\n\r\n{}", good.len(), good)
        );
    }
}
