//! A real local npm registry for the tests: verdaccio 5 (pinned in
//! `tests/npm-registry/package-lock.json`, installed into `target/npm-registry` by
//! `.ci/npm-registry`), started on a free loopback port with its storage in a temporary
//! directory and no uplinks, so everything a test installs comes from this registry alone.
//!
//! [`Registry::start`] creates a user the way `npm adduser` does (verdaccio answers with a
//! token) and writes an `.npmrc` holding the registry and that token; [`Registry::env`] is
//! what a child (npm, Bun) needs to install from and publish to it. The server is killed when
//! the [`Registry`] is dropped, and exits by itself when the test process dies (its stdin is
//! a pipe from this process; a preloaded script exits when that closes).
//!
//! Without verdaccio installed, [`Registry::start`] says why and returns `None` (the test then
//! passes with a note), unless `XCSH_REQUIRE_NPM_REGISTRY=1` (set by `.ci/run`) makes that a
//! failure.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::workspace_root;

/// How long verdaccio may take to answer `/-/ping` (about 2 s on an idle machine).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one HTTP exchange with the registry may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts tried when the free port found was taken before verdaccio bound it.
const START_ATTEMPTS: u32 = 3;

/// Loaded into verdaccio's Node (`NODE_OPTIONS=--require`): exit when stdin, a pipe from the
/// test process, closes, so a test process killed before its `Drop` ran leaves no server.
/// Only in the main thread: the logger's worker thread loads it too.
const WATCH_PARENT_JS: &str = "\
if (require('worker_threads').isMainThread) {
  const exit = () => process.exit(0);
  process.stdin.on('end', exit);
  process.stdin.on('close', exit);
  process.stdin.on('error', exit);
  process.stdin.resume();
}
";

/// The verdaccio the tests use: `$XCSH_VERDACCIO`, else the one `.ci/npm-registry` installs in
/// `target/npm-registry`. `None` when there is none: the caller's test then passes with a note,
/// unless `XCSH_REQUIRE_NPM_REGISTRY=1` (set by `.ci/run`), which fails it.
pub fn verdaccio() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("XCSH_VERDACCIO") {
        return Some(PathBuf::from(path));
    }
    let local = workspace_root().join("target/npm-registry/node_modules/.bin/verdaccio");
    if local.exists() {
        return Some(local);
    }
    let hint = "install it with `bash .ci/npm-registry` (as .ci/run does), or set XCSH_VERDACCIO";
    assert!(
        std::env::var_os("XCSH_REQUIRE_NPM_REGISTRY").is_none(),
        "verdaccio (the local npm registry) is not installed: {hint}"
    );
    eprintln!("skipped: verdaccio (the local npm registry) is not installed; {hint}");
    None
}

/// The MCPB CLI (`mcpb validate`) `.ci/npm-registry` installs beside verdaccio; `None` (with
/// a note) when it is not there, unless `XCSH_REQUIRE_NPM_REGISTRY=1`.
pub fn mcpb() -> Option<PathBuf> {
    let local = workspace_root().join("target/npm-registry/node_modules/.bin/mcpb");
    if local.exists() {
        return Some(local);
    }
    assert!(
        std::env::var_os("XCSH_REQUIRE_NPM_REGISTRY").is_none(),
        "mcpb is not installed: bash .ci/npm-registry"
    );
    eprintln!("skipped: mcpb is not installed (bash .ci/npm-registry)");
    None
}

/// A running verdaccio on `127.0.0.1`, with a user of its own (see the module's comment).
pub struct Registry {
    child: Child,
    port: u16,
    token: String,
    npmrc: PathBuf,
    dir: tempfile::TempDir,
}

impl Registry {
    /// Start a registry, wait until it answers, and create its user. `None` (after saying why)
    /// when verdaccio is not installed; see [`verdaccio`].
    pub fn start() -> Option<Self> {
        let verdaccio = verdaccio()?;
        let dir = tempfile::Builder::new()
            .prefix("xcsh-npm-registry-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
        let watch = dir.path().join("watch-parent.js");
        write(&watch, WATCH_PARENT_JS);
        let mut attempt = 1;
        let (child, port) = loop {
            match launch(&verdaccio, dir.path(), &watch) {
                Ok(started) => break started,
                Err(log) if attempt < START_ATTEMPTS && log.contains("EADDRINUSE") => {
                    attempt += 1;
                }
                Err(log) => panic!("verdaccio did not start:\n{log}"),
            }
        };
        let npmrc = dir.path().join("npmrc");
        let mut registry = Registry {
            child,
            port,
            token: String::new(),
            npmrc,
            dir,
        };
        registry.token = registry.add_user();
        let url = registry.url();
        let authority = format!("//127.0.0.1:{port}/");
        write(
            &registry.npmrc,
            &format!(
                "registry={url}\n{authority}:_authToken={}\n\
                 audit=false\nfund=false\nupdate-notifier=false\n",
                registry.token
            ),
        );
        Some(registry)
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The port verdaccio listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `.npmrc` holding `registry=` this registry and the user's `_authToken`.
    pub fn npmrc(&self) -> &Path {
        &self.npmrc
    }

    /// The user's token (what `npm login` would store).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// What a child needs to install from and publish to this registry (npm and Bun), with
    /// caches of its own, so that nothing comes from or lands in the user's (Bun's cache is
    /// keyed by name and version only: a package republished with other contents in another
    /// run would come from there):
    /// `NPM_CONFIG_REGISTRY`, `NPM_CONFIG_USERCONFIG` (this registry's `.npmrc`, in place of
    /// the user's), `NPM_CONFIG_CACHE`, `BUN_CONFIG_REGISTRY`, `BUN_CONFIG_TOKEN` (Bun 1.x
    /// reads the token of `NPM_CONFIG_USERCONFIG` too, but not when `BUN_CONFIG_REGISTRY` is
    /// set), `BUN_INSTALL_CACHE_DIR`.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("NPM_CONFIG_REGISTRY", self.url().into()),
            ("NPM_CONFIG_USERCONFIG", self.npmrc.clone().into()),
            ("NPM_CONFIG_CACHE", self.dir.path().join("npm-cache").into()),
            ("BUN_CONFIG_REGISTRY", self.url().into()),
            ("BUN_CONFIG_TOKEN", self.token.clone().into()),
            (
                "BUN_INSTALL_CACHE_DIR",
                self.dir.path().join("bun-cache").into(),
            ),
        ]
    }

    /// `npm publish path` to this registry, `path` a package directory or a `.tgz`; npm's
    /// output. Panics with what npm printed when it fails.
    pub fn publish(&self, path: &Path) -> Output {
        // Absolute: npm reads `dir/name` as a GitHub shorthand.
        let path = std::path::absolute(path)
            .unwrap_or_else(|e| panic!("cannot make {} absolute: {e}", path.display()));
        let output = Command::new("npm")
            .arg("publish")
            .arg(&path)
            .args(["--access", "public", "--provenance=false", "--registry"])
            .arg(self.url())
            .arg("--userconfig")
            .arg(&self.npmrc)
            .envs(self.env())
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run npm: {e}"));
        assert!(
            output.status.success(),
            "npm publish {} failed ({})\n--- stdout\n{}\n--- stderr\n{}\n--- verdaccio\n{}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
        output
    }

    /// The packument of `name` (`GET /NAME`: every version's manifest, `dist-tags`, `time`).
    /// Panics unless the registry has the package.
    pub fn view(&self, name: &str) -> Value {
        let path = format!("/{}", name.replace('/', "%2f"));
        let (status, body) = http(self.port, "GET", &path, None)
            .unwrap_or_else(|e| panic!("GET {path} from verdaccio: {e}\n{}", self.log()));
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "GET {path}: {text}");
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("GET {path} is not JSON ({e}): {text}"))
    }

    /// Where verdaccio keeps the published tarballs (`storage/@scope/name/name-VERSION.tgz`).
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// Verdaccio's log and its stdout and stderr, so far.
    pub fn log(&self) -> String {
        log(self.dir.path())
    }

    /// Create the registry's user (`PUT /-/user/org.couchdb.user:NAME`, as `npm adduser`
    /// does); the token verdaccio answers with.
    fn add_user(&self) -> String {
        let name = "xcsh-test";
        let password = format!("pw-{}-{:x}", std::process::id(), random());
        let body = serde_json::json!({
            "_id": format!("org.couchdb.user:{name}"),
            "name": name,
            "password": password,
            "type": "user",
            "roles": [],
        });
        let path = format!("/-/user/org.couchdb.user:{name}");
        let (status, answer) = http(self.port, "PUT", &path, Some(&body))
            .unwrap_or_else(|e| panic!("PUT {path} to verdaccio: {e}\n{}", self.log()));
        let text = String::from_utf8_lossy(&answer);
        assert_eq!(status, 201, "PUT {path}: {text}\n{}", self.log());
        serde_json::from_slice::<Value>(&answer)
            .ok()
            .and_then(|v| v["token"].as_str().map(str::to_owned))
            .unwrap_or_else(|| panic!("verdaccio created no token: {text}"))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // SIGKILL: verdaccio is one Node process (its logger's worker is a thread of it).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start verdaccio in `dir` on a free port and wait until it answers `/-/ping`; the child and
/// its port, or everything it logged when it exited first.
fn launch(verdaccio: &Path, dir: &Path, watch: &Path) -> Result<(Child, u16), String> {
    let port = free_port();
    let storage = dir.join("storage");
    let config = dir.join("config.yaml");
    // JSON strings are YAML strings: paths quoted whatever they hold.
    let quoted = |path: &Path| Value::from(path.to_string_lossy()).to_string();
    write(
        &config,
        &format!(
            "storage: {storage}\n\
             auth:\n  htpasswd:\n    file: {htpasswd}\n\
             uplinks: {{}}\n\
             packages:\n  '**':\n    access: $all\n    publish: $all\n    unpublish: $all\n\
             max_body_size: 200mb\n\
             web:\n  enable: false\n\
             listen: 127.0.0.1:{port}\n\
             log: {{ type: file, path: {log}, format: pretty, colors: false, level: http }}\n",
            storage = quoted(&storage),
            htpasswd = quoted(&dir.join("htpasswd")),
            log = quoted(&dir.join("verdaccio.log")),
        ),
    );
    let out = std::fs::File::create(dir.join("verdaccio.out"))
        .unwrap_or_else(|e| panic!("cannot create verdaccio.out: {e}"));
    let err = out
        .try_clone()
        .unwrap_or_else(|e| panic!("cannot share verdaccio.out: {e}"));
    let mut node_options = OsString::from(format!("--require {}", quoted(watch)));
    if let Some(inherited) = std::env::var_os("NODE_OPTIONS") {
        node_options.push(" ");
        node_options.push(inherited);
    }
    let mut child = Command::new(verdaccio)
        .arg("--config")
        .arg(&config)
        .current_dir(dir)
        .env("NODE_OPTIONS", node_options)
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", verdaccio.display()));
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok((200, _)) = http(port, "GET", "/-/ping", None) {
            return Ok((child, port));
        }
        match child.try_wait() {
            Ok(Some(status)) => return Err(format!("verdaccio exited ({status})\n{}", log(dir))),
            Ok(None) => {}
            Err(e) => panic!("cannot wait for verdaccio: {e}"),
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "verdaccio did not answer GET /-/ping on 127.0.0.1:{port} within {START_TIMEOUT:?}\n{}",
                log(dir)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A port nothing listens on now (verdaccio binds it a moment later; `launch` is retried when
/// another process took it in between).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|e| panic!("cannot find a free port: {e}"))
}

/// Verdaccio's log file and its stdout and stderr in `dir`.
fn log(dir: &Path) -> String {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    format!(
        "--- verdaccio.log\n{}--- verdaccio stdout and stderr\n{}",
        read("verdaccio.log"),
        read("verdaccio.out")
    )
}

fn write(path: &Path, contents: &str) {
    std::fs::write(path, contents)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// 64 bits that differ between calls and processes (std's per-process random hash keys).
fn random() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(Instant::now())
}

/// One HTTP/1.1 exchange with `127.0.0.1:port`, with a JSON body when given; the status and
/// the body (de-chunked).
fn http(
    port: u16,
    method: &str,
    path: &str,
    json: Option<&Value>,
) -> Result<(u16, Vec<u8>), String> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(HTTP_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(HTTP_TIMEOUT)))
        .map_err(|e| e.to_string())?;
    let body = json.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n\
         Connection: close\r\n"
    );
    if json.is_some() {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| e.to_string())?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            format!(
                "no end of headers in {:?}",
                String::from_utf8_lossy(&response)
            )
        })?;
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let rest = &response[split + 4..];
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_ascii_lowercase())
        })
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(rest)?
    } else if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        rest.get(..length)
            .ok_or_else(|| format!("body shorter than its Content-Length {length}"))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok((status, body))
}

/// The body of a `Transfer-Encoding: chunked` response.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk without its size line")?;
        let size_line = String::from_utf8_lossy(&rest[..line_end]);
        let size_hex = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|e| format!("bad chunk size {size_hex:?}: {e}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(rest.get(..size).ok_or("a chunk cut short")?);
        rest = rest.get(size + 2..).ok_or("a chunk without its CRLF")?;
    }
}
