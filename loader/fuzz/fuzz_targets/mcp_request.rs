//! Fuzz the MCP request path: after a normal handshake, the input is sent as one JSON-RPC
//! line. Whatever it is, the server must not panic and must still answer a `tools/list`.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[path = "common.rs"]
mod common;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const PROBE: &str = r#"{"jsonrpc":"2.0","id":"probe","method":"tools/list"}"#;

fuzz_target!(|data: &[u8]| {
    // One line: a newline inside the input would only split it into more requests.
    let line: Vec<u8> = data.iter().copied().filter(|&b| b != b'\n').collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let served = tokio::spawn(xcsh_loader::mcp::serve(
            common::session(),
            server_read,
            server_write,
        ));
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = BufReader::new(client_read).lines();
        let mut send = Vec::new();
        for message in [
            INITIALIZE.as_bytes(),
            b"\n",
            INITIALIZED.as_bytes(),
            b"\n",
            &line,
            b"\n",
            PROBE.as_bytes(),
            b"\n",
        ] {
            send.extend_from_slice(message);
        }
        client_write.write_all(&send).await.expect("write");
        let answered = tokio::time::timeout(Duration::from_secs(5), async {
            while let Ok(Some(reply)) = lines.next_line().await {
                if reply.contains(r#""id":"probe""#) {
                    return reply.contains(r#""tools""#);
                }
            }
            false
        })
        .await;
        assert!(
            matches!(answered, Ok(true)),
            "the server stopped answering after {:?}",
            String::from_utf8_lossy(&line)
        );
        drop(client_write);
        drop(lines);
        let _ = tokio::time::timeout(Duration::from_secs(5), served).await;
    });
});
