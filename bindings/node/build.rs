//! napi-rs's link setup (macOS: let `napi_*` symbols resolve from the loading runtime).
fn main() {
    napi_build::setup();
}
