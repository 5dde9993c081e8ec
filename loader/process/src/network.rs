//! `--deny-network` without holes: a seccomp-bpf filter that a plugin's child installs on
//! itself (after Landlock, before the plugin is loaded) so that no socket can be had but a
//! Unix stream pair.
//!
//! # What is refused, and how
//!
//! | system call | refused | why |
//! |---|---|---|
//! | `socket` | always, whatever the family | TCP, UDP, raw, packet, netlink, and any `AF_UNIX` socket, with which the plugin could `connect` to a pathname or abstract socket outside (an SSH agent, a container daemon) |
//! | `socketpair` | unless `AF_UNIX` and `SOCK_STREAM` | a datagram pair can still `connect` or `sendto` a pathname or abstract datagram socket (`/dev/log`, a notify socket); a stream pair is connected for good |
//! | `io_uring_setup`, `io_uring_enter`, `io_uring_register` | always | `IORING_OP_SOCKET` and `IORING_OP_CONNECT` run in the kernel's workers, where no seccomp filter looks |
//! | `pidfd_getfd` | always | copying a socket out of another process (Landlock already refuses that for processes outside the sandbox; this holds without Landlock too) |
//!
//! Each refusal is the error `EACCES` (`Permission denied (os error 13)`), never a kill: a
//! plugin sees an I/O error it can report, and the process goes on. The only kill is
//! seccompiler's check of the calling convention: a system call made through another ABI
//! (the 32-bit `int 0x80` on x86-64, where `socketcall` would get past the numbers above)
//! ends the process. On x86-64 the x32 numbers of the calls above are refused too.
//!
//! The child itself needs none of these once it runs: its protocol socket is one end of the
//! host's `socketpair`, inherited as a descriptor, and its runtimes (tokio's signal driver)
//! make Unix stream pairs.
//!
//! # Why seccomp, and not a network namespace or Landlock alone
//!
//! - Landlock governs TCP `bind` and `connect` only (ABI 4), abstract Unix sockets only from
//!   ABI 6 (`LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET`), and pathname Unix sockets not at all: UDP,
//!   raw, packet and netlink sockets, and a connect to `/run/docker.sock`, stay open. Its rules
//!   are kept as a further layer.
//! - An unprivileged network namespace needs user namespaces, which many distributions turn
//!   off or restrict for unprivileged users (Debian's sysctl, Ubuntu's AppArmor policy), costs
//!   a `clone` with new namespaces per child, and still leaves pathname Unix sockets reachable
//!   (they live in the filesystem, not in the network namespace).
//! - seccomp filters exist on every kernel since 3.5, are inherited by every thread and
//!   process the plugin starts, cannot be removed, and cost a few instructions per system
//!   call. Refusing `socket` by family alone would leave `AF_UNIX` connects open, so every
//!   family is refused; `socketpair` is what a process needs to talk to itself.
//!
//! The filter is built with `seccompiler` (rust-vmm's, the one Firecracker uses) rather than by
//! hand: it writes the architecture check and the jumps, and installs the program.
//! Where the kernel has no seccomp filter, the report says so (`network: partial` with
//! Landlock's TCP rules, `none` without them), as it does for Landlock.

/// Install the filter on this thread and everything it starts later. `Ok(true)` once it is in
/// force, `Ok(false)` where this kernel or architecture has no seccomp filter to offer.
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
pub fn deny_sockets() -> Result<bool, super::sandbox::SandboxError> {
    let program = filter().map_err(|e| super::sandbox::SandboxError::Seccomp(e.to_string()))?;
    match seccompiler::apply_filter(&program) {
        Ok(()) => Ok(true),
        // A kernel built without seccomp filters.
        Err(seccompiler::Error::Seccomp(error))
            if matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) =>
        {
            Ok(false)
        }
        Err(error) => Err(super::sandbox::SandboxError::Seccomp(error.to_string())),
    }
}

/// Where seccompiler has no target (or not Linux): nothing is installed, and the report says
/// so.
#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
)))]
pub fn deny_sockets() -> Result<bool, super::sandbox::SandboxError> {
    Ok(false)
}

/// The compiled filter (see the module docs for what it refuses).
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
fn filter() -> Result<seccompiler::BpfProgram, seccompiler::Error> {
    use std::collections::BTreeMap;

    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    #[cfg(target_arch = "x86_64")]
    let arch = TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    let arch = TargetArch::aarch64;
    #[cfg(target_arch = "riscv64")]
    let arch = TargetArch::riscv64;

    const AF_UNIX: u64 = libc::AF_UNIX as u64;
    const SOCK_STREAM: u64 = libc::SOCK_STREAM as u64;
    /// The socket type without `SOCK_NONBLOCK` and `SOCK_CLOEXEC`.
    const SOCK_TYPE_MASK: u64 = 0xf;

    // `socketpair(family, type, ...)`: refused unless `AF_UNIX` and a stream. Rules are or-ed,
    // conditions in a rule and-ed.
    let mut pair_rules = vec![SeccompRule::new(vec![SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        AF_UNIX,
    )?])?];
    for kind in (0..=SOCK_TYPE_MASK).filter(|kind| *kind != SOCK_STREAM) {
        pair_rules.push(SeccompRule::new(vec![SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            kind,
        )?])?);
    }
    // An empty rule list refuses the call whatever its arguments.
    let always = [
        libc::SYS_socket,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_pidfd_getfd,
    ];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for number in always {
        rules.insert(number, Vec::new());
    }
    rules.insert(libc::SYS_socketpair, pair_rules.clone());
    // x32 (the x86-64 ABI with 32-bit pointers) calls the same numbers with bit 30 set, under
    // the same architecture tag.
    #[cfg(target_arch = "x86_64")]
    {
        const X32: i64 = 0x4000_0000;
        for number in always {
            rules.insert(number | X32, Vec::new());
        }
        rules.insert(libc::SYS_socketpair | X32, pair_rules);
    }
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )?
    .try_into()
    .map_err(seccompiler::Error::Backend)
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};

    /// The filter binds the thread that installs it; a fresh thread keeps the test process
    /// itself unfiltered.
    #[test]
    fn every_socket_but_a_unix_stream_pair_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outside.sock");
        let _listener = UnixListener::bind(&path).unwrap();
        let outside = UnixDatagram::bind(dir.path().join("outside.dgram")).unwrap();
        let dgram_path = dir.path().join("outside.dgram");
        let (installed, tcp, udp, unix, pair, dgram_pair) = std::thread::spawn(move || {
            let installed = super::deny_sockets().unwrap();
            (
                installed,
                std::net::TcpListener::bind("127.0.0.1:0").map(drop),
                std::net::UdpSocket::bind("127.0.0.1:0").map(drop),
                UnixStream::connect(&path).map(drop),
                UnixStream::pair().map(drop),
                UnixDatagram::pair().and_then(|(a, _b)| a.connect(&dgram_path)),
            )
        })
        .join()
        .unwrap();
        drop(outside);
        if !installed {
            eprintln!("skipped: this kernel has no seccomp filter");
            return;
        }
        for refused in [tcp, udp, unix, dgram_pair] {
            assert_eq!(refused.unwrap_err().raw_os_error(), Some(13));
        }
        assert!(pair.is_ok(), "a Unix stream pair stays allowed");
        // This thread was never filtered.
        std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    }
}
