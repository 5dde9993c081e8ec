//! What a library file was built for, read from its headers, against what this host runs.
//!
//! Why: handed a library for another machine, the dynamic loader answers with something
//! unhelpful (glibc's `cannot open shared object file: No such file or directory` for an
//! aarch64 `.so` that is right there, `invalid ELF header` for a Mach-O file, `version
//! 'GLIBC_2.39' not found` without the system's own version). So before `dlopen`, the file's
//! headers are read: an ELF file's machine, class and byte order, a Mach-O file's CPU type
//! (universal files: each of their slices), a PE file's machine, and for a Linux library the
//! newest `GLIBC_x.y` version it needs (its `.gnu.version_r`). A mismatch becomes
//! [`LoadErrorKind::ForeignPlatform`] or [`LoadErrorKind::NewerGlibc`], which say what the file
//! was built for and what this host runs; `check` adds [`build_hint`].
//!
//! Only headers are read (for the glibc needs, the section headers and one small section);
//! nothing of the file runs.

use object::{elf, macho, FileKind, ReadRef};

use crate::loading::headers::{
    glibc_versions_needed, machine_of, read_api_marker, ApiMarker, Machine,
};
use crate::loading::LoadErrorKind;

/// The Rust target triple this host was built for (`x86_64-unknown-linux-gnu`): the name of
/// its subfolder in a multi-platform plugin folder, and the target of [`build_hint`].
pub const HOST_TARGET: &str = env!("XCSH_HOST_TARGET");

/// An operating system, as far as a library's headers tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Os {
    /// ELF with the System V or GNU OS ABI: what Linux uses.
    Linux,
    /// ELF with another OS ABI (FreeBSD, Solaris, ...), named.
    OtherElf(String),
    /// macOS (Mach-O).
    Apple,
    Windows,
}

/// The file format, named in a message when it is not this host's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Elf,
    MachO,
    Pe,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Elf => "ELF",
            Format::MachO => "Mach-O",
            Format::Pe => "PE",
        }
    }

    /// The format this host's dynamic loader reads.
    fn host() -> Self {
        if cfg!(target_vendor = "apple") {
            Format::MachO
        } else if cfg!(windows) {
            Format::Pe
        } else {
            Format::Elf
        }
    }
}

/// One platform a library was built for: its OS and architecture (Rust's names, with
/// `(32-bit)` or `big-endian` where those differ from the usual for that machine).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Platform {
    os: Os,
    arch: String,
}

impl Platform {
    /// How people name it: `aarch64 Linux`, `macOS arm64`, `Windows x86_64`.
    fn describe(&self) -> String {
        match &self.os {
            Os::Linux => format!("{} Linux", self.arch),
            Os::OtherElf(os) => format!("{} {os}", self.arch),
            Os::Apple => format!("macOS {}", apple_arch(&self.arch)),
            Os::Windows => format!("Windows {}", self.arch),
        }
    }

    /// This host's own platform.
    fn host() -> Self {
        let os = if cfg!(target_vendor = "apple") {
            Os::Apple
        } else if cfg!(windows) {
            Os::Windows
        } else if cfg!(target_os = "linux") {
            Os::Linux
        } else {
            Os::OtherElf(std::env::consts::OS.to_owned())
        };
        Platform {
            os,
            arch: host_arch(),
        }
    }
}

/// Apple calls aarch64 `arm64`.
fn apple_arch(arch: &str) -> &str {
    if arch == "aarch64" {
        "arm64"
    } else {
        arch
    }
}

/// This host's architecture as [`elf_arch`] would name a library built for it.
fn host_arch() -> String {
    let arch = std::env::consts::ARCH;
    if arch == "powerpc64" && cfg!(target_endian = "little") {
        "powerpc64le".to_owned()
    } else {
        arch.to_owned()
    }
}

/// How this host is described in messages: `x86_64 Linux`, `macOS arm64`.
pub fn host_platform() -> String {
    Platform::host().describe()
}

/// What the headers say a library was built for: one platform, or the slices of a universal
/// Mach-O file.
struct BuiltFor {
    format: Format,
    /// The kind `object` read (not for PE), so that later reads need not parse it again.
    kind: Option<FileKind>,
    platforms: Vec<Platform>,
}

impl BuiltFor {
    /// `macOS arm64`, or for a universal file `universal (macOS x86_64, macOS arm64)`.
    fn describe(&self) -> String {
        let described: Vec<String> = self.platforms.iter().map(Platform::describe).collect();
        match described.as_slice() {
            [one] => one.clone(),
            many => format!("universal ({})", many.join(", ")),
        }
    }
}

/// Read what `data` was built for. `None` when the headers are not of a format named here
/// (the header check says what is wrong with such a file).
fn built_for<'data, R: ReadRef<'data>>(data: R) -> Option<BuiltFor> {
    let (format, kind, platforms) = match machine_of(data)? {
        Machine::Pe { machine } => {
            let arch = match machine {
                0x8664 => "x86_64".to_owned(),
                0xaa64 => "aarch64".to_owned(),
                0x014c => "x86".to_owned(),
                0x01c4 => "arm".to_owned(),
                other => format!("machine {other:#x}"),
            };
            let platform = Platform {
                os: Os::Windows,
                arch,
            };
            (Format::Pe, None, vec![platform])
        }
        Machine::Elf {
            kind,
            os_abi,
            machine,
            is_64,
            little,
        } => {
            let os = match os_abi {
                elf::ELFOSABI_SYSV | elf::ELFOSABI_GNU => Os::Linux,
                elf::ELFOSABI_FREEBSD => Os::OtherElf("FreeBSD".to_owned()),
                elf::ELFOSABI_NETBSD => Os::OtherElf("NetBSD".to_owned()),
                elf::ELFOSABI_OPENBSD => Os::OtherElf("OpenBSD".to_owned()),
                elf::ELFOSABI_SOLARIS => Os::OtherElf("Solaris".to_owned()),
                other => Os::OtherElf(format!("(ELF OS ABI {other})")),
            };
            let arch = elf_arch(machine, is_64, little);
            (Format::Elf, Some(kind), vec![Platform { os, arch }])
        }
        Machine::MachO { kind, cpus } => {
            let platforms = cpus.into_iter().map(macho_platform).collect();
            (Format::MachO, Some(kind), platforms)
        }
    };
    Some(BuiltFor {
        format,
        kind,
        platforms,
    })
}

fn macho_platform(cpu: u32) -> Platform {
    let arch = match cpu {
        macho::CPU_TYPE_X86_64 => "x86_64".to_owned(),
        macho::CPU_TYPE_ARM64 => "aarch64".to_owned(),
        macho::CPU_TYPE_X86 => "x86".to_owned(),
        macho::CPU_TYPE_ARM => "arm".to_owned(),
        macho::CPU_TYPE_ARM64_32 => "arm64_32".to_owned(),
        other => format!("CPU type {other:#x}"),
    };
    Platform {
        os: Os::Apple,
        arch,
    }
}

/// Rust's name for an ELF machine, with the class or byte order added where they are not the
/// usual ones for it (`x86_64 (32-bit)` is the x32 ABI).
fn elf_arch(machine: u16, is_64: bool, little: bool) -> String {
    let (name, usual_64, usual_little) = match machine {
        elf::EM_X86_64 => ("x86_64", true, true),
        elf::EM_AARCH64 => ("aarch64", true, true),
        elf::EM_386 => ("x86", false, true),
        elf::EM_ARM => ("arm", false, true),
        elf::EM_RISCV if is_64 => ("riscv64", true, true),
        elf::EM_RISCV => ("riscv32", false, true),
        elf::EM_PPC64 if little => ("powerpc64le", true, true),
        elf::EM_PPC64 => ("powerpc64", true, false),
        elf::EM_PPC => ("powerpc", false, false),
        elf::EM_S390 => ("s390x", true, false),
        elf::EM_LOONGARCH => ("loongarch64", true, true),
        elf::EM_MIPS => ("mips", false, false),
        other => return format!("ELF machine {other}"),
    };
    let mut arch = name.to_owned();
    if is_64 != usual_64 {
        arch.push_str(if is_64 { " (64-bit)" } else { " (32-bit)" });
    }
    if little != usual_little {
        arch.push_str(if little {
            " little-endian"
        } else {
            " big-endian"
        });
    }
    arch
}

/// Whether the library in `data` can run on this host: its OS and architecture, then (a Linux
/// library on a glibc host) the glibc versions it needs. `Ok` also when the headers are of no
/// format named here: the header check refuses those with its own reason.
pub(crate) fn check_platform<'data, R: ReadRef<'data>>(data: R) -> Result<(), LoadErrorKind> {
    let Some(built) = built_for(data) else {
        return Ok(());
    };
    let host = Platform::host();
    if !built.platforms.contains(&host) {
        return Err(LoadErrorKind::ForeignPlatform {
            built_for: built.describe(),
            format: (built.format != Format::host()).then(|| built.format.name().to_owned()),
            host: host.describe(),
        });
    }
    // Only a Linux (ELF) library on a glibc host has glibc needs to compare.
    if !matches!(built.kind, Some(FileKind::Elf64 | FileKind::Elf32)) {
        return Ok(());
    }
    let Some(has) = crate::sys::glibc_version() else {
        return Ok(());
    };
    let needs = built.kind.and_then(|kind| newest_glibc(data, kind));
    match (needs, parse_glibc(&has)) {
        (Some(needs), Some(running)) if needs > running => Err(LoadErrorKind::NewerGlibc {
            needs: format!("{}.{}", needs.0, needs.1),
            has,
        }),
        _ => Ok(()),
    }
}

/// `2.36` (or `2.36.1`) as numbers to compare.
fn parse_glibc(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The newest `GLIBC_x.y` any of the library's version needs names (from whichever of glibc's
/// libraries: libc, libm, libpthread, ld.so). `None` without version needs.
fn newest_glibc<'data, R: ReadRef<'data>>(data: R, kind: FileKind) -> Option<(u32, u32)> {
    glibc_versions_needed(data, kind)
        .into_iter()
        .filter_map(|name| {
            std::str::from_utf8(name)
                .ok()?
                .strip_prefix("GLIBC_")
                .and_then(parse_glibc)
        })
        .max()
}

/// What a library file's headers say, read without loading it: for `check` on another
/// platform's library in a plugin folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryHeaders {
    /// The platform it was built for (`macOS arm64`), as in [`LoadErrorKind::ForeignPlatform`].
    pub built_for: String,
    /// The `xcsh-plugin-api` version its marker names, if it has one.
    pub api_version: Option<String>,
}

/// Read what the library at `path` was built for, and the plugin API its marker names.
/// Nothing of it is loaded.
pub fn read_headers(path: &std::path::Path) -> Result<LibraryHeaders, super::LoadError> {
    let error = |kind| super::LoadError::new(path, kind);
    let file = std::fs::File::open(path).map_err(|e| {
        error(LoadErrorKind::Unreadable {
            cause: e.to_string(),
        })
    })?;
    let data = &object::ReadCache::new(file);
    let built = built_for(data).ok_or_else(|| {
        error(LoadErrorKind::NotALibrary {
            cause: "not an ELF, Mach-O or PE file".to_owned(),
        })
    })?;
    let api_version = match read_api_marker(data) {
        ApiMarker::Version(version) => Some(version),
        _ => None,
    };
    Ok(LibraryHeaders {
        built_for: built.describe(),
        api_version,
    })
}

/// The platform a Rust target triple names, described as [`read_headers`] describes a
/// library (`aarch64-apple-darwin`: `macOS arm64`); `None` for a triple not known here.
pub fn target_platform(triple: &str) -> Option<String> {
    let mut parts = triple.split('-');
    let arch = match parts.next()? {
        "x86_64" => "x86_64",
        "aarch64" | "arm64" => "aarch64",
        "i586" | "i686" => "x86",
        "riscv64gc" | "riscv64" => "riscv64",
        "powerpc64le" => "powerpc64le",
        "powerpc64" => "powerpc64",
        "s390x" => "s390x",
        "loongarch64" => "loongarch64",
        arm if arm.starts_with("arm") || arm.starts_with("thumb") => "arm",
        _ => return None,
    };
    let os = if triple.contains("-linux") {
        Os::Linux
    } else if triple.contains("-darwin") {
        Os::Apple
    } else if triple.contains("-windows") {
        Os::Windows
    } else if triple.contains("-freebsd") {
        Os::OtherElf("FreeBSD".to_owned())
    } else {
        return None;
    };
    Some(
        Platform {
            os,
            arch: arch.to_owned(),
        }
        .describe(),
    )
}

/// How to build a plugin for this host, for `check` to add to a platform error.
pub fn build_hint() -> String {
    match crate::sys::glibc_version() {
        Some(has) => format!(
            "build it for this host with `cargo build --release` on this machine, or from any \
             machine with `cargo zigbuild --release --target {HOST_TARGET}.2.17` \
             (`pip install cargo-zigbuild ziglang`; any glibc floor up to {has} runs here)"
        ),
        None => {
            format!("build it for this host with `cargo build --release --target {HOST_TARGET}`")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(bytes: &[u8]) -> Result<(), LoadErrorKind> {
        check_platform(bytes)
    }

    /// A minimal ELF64 shared-library header for `machine`.
    fn elf64(machine: u16, os_abi: u8) -> Vec<u8> {
        let mut bytes = vec![0u8; 64];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = elf::ELFCLASS64;
        bytes[5] = elf::ELFDATA2LSB;
        bytes[6] = elf::EV_CURRENT;
        bytes[7] = os_abi;
        bytes[16..18].copy_from_slice(&elf::ET_DYN.to_le_bytes());
        bytes[18..20].copy_from_slice(&machine.to_le_bytes());
        bytes[20..24].copy_from_slice(&1u32.to_le_bytes());
        bytes[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        bytes
    }

    #[test]
    fn names_follow_the_platforms_conventions() {
        let linux = Platform {
            os: Os::Linux,
            arch: "aarch64".into(),
        };
        assert_eq!(linux.describe(), "aarch64 Linux");
        let mac = Platform {
            os: Os::Apple,
            arch: "aarch64".into(),
        };
        assert_eq!(mac.describe(), "macOS arm64");
        assert_eq!(elf_arch(elf::EM_X86_64, false, true), "x86_64 (32-bit)");
        assert_eq!(elf_arch(elf::EM_PPC64, true, true), "powerpc64le");
        assert_eq!(parse_glibc("2.36"), Some((2, 36)));
        assert_eq!(parse_glibc("2.17.1"), Some((2, 17)));
        assert_eq!(parse_glibc("PRIVATE"), None);
        assert_eq!(
            target_platform("aarch64-apple-darwin").as_deref(),
            Some("macOS arm64")
        );
        assert_eq!(
            target_platform("aarch64-unknown-linux-gnu").as_deref(),
            Some("aarch64 Linux")
        );
        assert_eq!(target_platform(HOST_TARGET), Some(host_platform()));
        assert_eq!(target_platform("wasm32-unknown-unknown"), None);
    }

    #[test]
    fn another_machine_is_named_with_this_host() {
        let foreign = if cfg!(target_arch = "aarch64") {
            (elf::EM_X86_64, "x86_64")
        } else {
            (elf::EM_AARCH64, "aarch64")
        };
        let Err(LoadErrorKind::ForeignPlatform {
            built_for,
            format,
            host,
        }) = kind_of(&elf64(foreign.0, elf::ELFOSABI_SYSV))
        else {
            panic!("an ELF file for another machine must be refused");
        };
        assert_eq!(built_for, format!("{} Linux", foreign.1));
        assert_eq!(host, host_platform());
        assert_eq!(
            format.is_some(),
            cfg!(any(target_vendor = "apple", windows))
        );
    }

    #[test]
    fn a_pe_file_is_named() {
        let mut bytes = vec![0u8; 0x100];
        bytes[..2].copy_from_slice(b"MZ");
        bytes[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        bytes[0x80..0x84].copy_from_slice(b"PE\0\0");
        // On Windows x64 an x64 PE file is this host's own: an arm64 one is foreign there.
        let (machine, arch) = if cfg!(all(windows, target_arch = "x86_64")) {
            (0xAA64u16, "aarch64")
        } else {
            (0x8664u16, "x86_64")
        };
        bytes[0x84..0x86].copy_from_slice(&machine.to_le_bytes());
        let Err(LoadErrorKind::ForeignPlatform {
            built_for, format, ..
        }) = kind_of(&bytes)
        else {
            panic!("a PE file must be refused");
        };
        assert_eq!(built_for, format!("Windows {arch}"));
        assert_eq!(format.is_some(), !cfg!(windows));
        if !cfg!(windows) {
            assert_eq!(format.as_deref(), Some("PE"));
        }
    }

    #[test]
    fn junk_is_left_to_the_header_check() {
        assert_eq!(kind_of(b"hello"), Ok(()));
        assert_eq!(kind_of(b""), Ok(()));
    }
}
