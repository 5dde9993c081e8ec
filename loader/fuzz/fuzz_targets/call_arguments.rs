//! Fuzz argument validation and `resolve`: arbitrary JSON (or text) as the arguments of
//! `echo`, `preview` or `resolve`. Nothing may panic; outcomes must stay within the contract;
//! the renderer must never emit raw control characters.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use xcsh_loader::{render_resolve, RenderStyle, NO_PENDING_ACTION};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let tool = ["echo", "preview", "resolve"][usize::from(selector % 3)];
    let text = String::from_utf8_lossy(rest);
    let arguments =
        serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text.into_owned()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let session = common::session();
        if selector & 0x80 != 0 {
            session.call("preview", serde_json::json!({})).await;
        }
        let pending_before = session.store().map_or(0, |s| s.count());
        let outcome = session.call(tool, arguments).await;
        if tool == "resolve" {
            let details = outcome.result.details.as_ref();
            if !outcome.is_error || outcome.text() == NO_PENDING_ACTION {
                // A resolve that got past validation always carries its details.
                assert!(details.is_some(), "resolve outcome without details");
            }
            if pending_before == 0 && !outcome.is_error {
                panic!("resolve succeeded with nothing pending");
            }
            let rendered = render_resolve(
                &outcome,
                RenderStyle {
                    width: 40,
                    color: false,
                },
            );
            assert!(
                !rendered.chars().any(|c| c.is_control() && c != '\n'),
                "raw control character in {rendered:?}"
            );
        }
    });
});
