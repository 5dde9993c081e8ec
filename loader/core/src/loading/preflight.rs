//! Checks on a plugin file's bytes before it is handed to the dynamic loader.
//!
//! `dlopen` trusts the file's headers: a truncated library whose segments point past the end
//! of the file is mapped anyway, and the first access to the missing pages kills the process
//! with SIGBUS. So before loading, the file is parsed with the `object` crate and every
//! loadable segment and section must lie inside the file. Anything else is reported as "not a
//! loadable shared library" with the reason. The file checked is the file loaded (see
//! [`crate::loading::open`]); only the headers are read, not the whole file.

//!
//! The file's other facts (its plugin API, build-id, platform) are read in `headers`.

use object::read::elf::{Dyn, FileHeader, ProgramHeader, SectionHeader};

/// `DT_RELR` and its size (glibc 2.36's packed relative relocations; not in `object`).
const DT_RELR: u32 = 36;
const DT_RELRSZ: u32 = 35;
use object::{elf, Endianness, FileKind, Object, ObjectSection, ObjectSegment, ReadRef};

#[cfg(windows)]
use super::headers::pe_subsystem;

/// Why a file cannot be a loadable library, or `Ok` when its headers are sound. `data` is
/// the file's bytes, or a reader that fetches only the ranges the parser asks for. For ELF
/// only the file header, the program headers and the section headers are read (not the
/// symbol tables a full parse would read), so the check costs a few small reads.
pub(crate) fn check_library<'data, R: ReadRef<'data>>(data: R) -> Result<(), String> {
    let len = data
        .len()
        .map_err(|()| "cannot read the file's size".to_owned())?;
    if len == 0 {
        return Err("the file is empty".to_owned());
    }
    let not_an_object =
        |e: object::Error| format!("not an object file this platform can load ({e})");
    match FileKind::parse(data).map_err(not_an_object)? {
        FileKind::Elf64 => check_elf::<elf::FileHeader64<Endianness>, R>(data, len),
        FileKind::Elf32 => check_elf::<elf::FileHeader32<Endianness>, R>(data, len),
        #[cfg(windows)]
        FileKind::Pe32 | FileKind::Pe64 => check_pe(data, len),
        _ => check_any(data, len),
    }
    .map_err(|problem| match problem {
        Problem::Parse(e) => not_an_object(e),
        Problem::Other(message) => message,
    })
}

/// A check's failure: the parser's error, or a message already written for the user.
enum Problem {
    Parse(object::Error),
    Other(String),
}

impl From<object::Error> for Problem {
    fn from(error: object::Error) -> Self {
        Problem::Parse(error)
    }
}

fn not_a_shared_library(kind: impl std::fmt::Debug) -> Problem {
    Problem::Other(format!(
        "not a shared library (object kind {kind:?}); build the plugin with crate-type = [\"cdylib\"]"
    ))
}

fn outside(what: &str, offset: u64, size: u64, len: u64) -> Option<Problem> {
    offset
        .checked_add(size)
        .is_none_or(|end| end > len)
        .then(|| {
            Problem::Other(format!(
                "truncated: {what} spans bytes {offset}..{} but the file has {len} bytes",
                offset.saturating_add(size)
            ))
        })
}

fn check_elf<'data, H, R>(data: R, len: u64) -> Result<(), Problem>
where
    H: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let header = H::parse(data)?;
    let endian = header.endian()?;
    if header.e_type(endian) != elf::ET_DYN {
        let kind = match header.e_type(endian) {
            elf::ET_REL => object::ObjectKind::Relocatable,
            elf::ET_EXEC => object::ObjectKind::Executable,
            elf::ET_CORE => object::ObjectKind::Core,
            _ => object::ObjectKind::Unknown,
        };
        return Err(not_a_shared_library(kind));
    }
    let segments = header.program_headers(endian, data)?;
    for segment in segments {
        let (offset, size) = (
            segment.p_offset(endian).into(),
            segment.p_filesz(endian).into(),
        );
        if let Some(problem) = outside("a segment", offset, size, len) {
            return Err(problem);
        }
    }
    check_elf_layout::<H, R>(segments, endian, data)
        .map_err(|message| Problem::Other(format!("damaged: {message}")))?;
    for section in header.section_headers(endian, data)? {
        if section.sh_type(endian) == elf::SHT_NOBITS {
            continue;
        }
        let (offset, size) = (
            section.sh_offset(endian).into(),
            section.sh_size(endian).into(),
        );
        if outside("", offset, size, len).is_some() {
            // Only now read the section names, to say which one.
            let name = header
                .sections(endian, data)
                .ok()
                .and_then(|table| table.section_name(endian, section).ok())
                .map_or_else(
                    || "?".to_owned(),
                    |n| String::from_utf8_lossy(n).into_owned(),
                );
            return Err(outside(&format!("section {name}"), offset, size, len)
                .unwrap_or_else(|| Problem::Other("truncated".to_owned())));
        }
    }
    Ok(())
}

/// What the dynamic loader will trust in an ELF library's program headers, checked: the
/// loadable segments are sound (a file part no larger than the memory part, alignments that
/// agree, in ascending order without overlap), the dynamic section and the other parts the
/// loader reads in memory (notes, TLS image, RELRO, the headers themselves) lie inside
/// loadable segments, and so does every table the dynamic section points at (symbols,
/// strings, hashes, relocations, initialisers), with its size. A file that passes can still be
/// damaged where nothing here looks; the probe (`isolate::probe`) catches the rest.
fn check_elf_layout<'data, H, R>(
    segments: &'data [H::ProgramHeader],
    endian: Endianness,
    data: R,
) -> Result<(), String>
where
    H: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let mut loads: Vec<(u64, u64)> = Vec::new();
    for segment in segments {
        if segment.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let vaddr: u64 = segment.p_vaddr(endian).into();
        let memsz: u64 = segment.p_memsz(endian).into();
        let filesz: u64 = segment.p_filesz(endian).into();
        let offset: u64 = segment.p_offset(endian).into();
        let align: u64 = segment.p_align(endian).into();
        if filesz > memsz {
            return Err(format!(
                "a loadable segment at {vaddr:#x} holds {filesz} bytes of the file in {memsz} bytes of memory"
            ));
        }
        if align > 1
            && (!align.is_power_of_two() || !vaddr.wrapping_sub(offset).is_multiple_of(align))
        {
            return Err(format!(
                "a loadable segment at {vaddr:#x} has an alignment ({align:#x}) its address and offset do not agree with"
            ));
        }
        let end = vaddr.checked_add(memsz).ok_or_else(|| {
            format!("a loadable segment at {vaddr:#x} ends past the address space")
        })?;
        if loads
            .last()
            .is_some_and(|&(_, previous_end)| vaddr < previous_end)
        {
            return Err(format!(
                "the loadable segment at {vaddr:#x} overlaps or precedes the one before it"
            ));
        }
        loads.push((vaddr, end));
    }
    if loads.is_empty() {
        return Err("no loadable segment".to_owned());
    }
    let mapped = |start: u64, size: u64| {
        start.checked_add(size).is_some_and(|end| {
            loads
                .iter()
                .any(|&(load_start, load_end)| start >= load_start && end <= load_end)
        })
    };
    let mut dynamic = None;
    for segment in segments {
        let kind = segment.p_type(endian);
        let what = match kind {
            elf::PT_DYNAMIC => "the dynamic section",
            elf::PT_NOTE => "a note",
            elf::PT_TLS => "the thread-local data",
            elf::PT_GNU_RELRO => "the read-only-after-relocation part",
            elf::PT_GNU_EH_FRAME => "the unwinding table",
            elf::PT_PHDR => "the program headers",
            elf::PT_GNU_PROPERTY => "the property note",
            _ => continue,
        };
        let vaddr: u64 = segment.p_vaddr(endian).into();
        let size: u64 = if kind == elf::PT_GNU_RELRO {
            segment.p_memsz(endian).into()
        } else {
            segment.p_filesz(endian).into()
        };
        if !mapped(vaddr, size) {
            return Err(format!(
                "{what} ({size} bytes at {vaddr:#x}) lies outside every loadable segment"
            ));
        }
        if kind == elf::PT_DYNAMIC {
            if dynamic.is_some() {
                return Err("more than one dynamic section".to_owned());
            }
            dynamic = Some(segment);
        }
    }
    let Some(dynamic) = dynamic else {
        return Err("no dynamic section".to_owned());
    };
    let entries = dynamic
        .dynamic(endian, data)
        .map_err(|e| format!("the dynamic section cannot be read ({e})"))?
        .unwrap_or_default();
    let value = |tag: u32| {
        entries
            .iter()
            .find(|entry| entry.d_tag(endian).into() == u64::from(tag))
            .map(|entry| entry.d_val(endian).into())
    };
    // Each table the loader reads, and the entry giving its size (0: the loader reads at
    // least its first bytes).
    let tables: &[(u32, u32, &str)] = &[
        (elf::DT_STRTAB, elf::DT_STRSZ, "string table"),
        (elf::DT_SYMTAB, 0, "symbol table"),
        (elf::DT_HASH, 0, "hash table"),
        (elf::DT_GNU_HASH, 0, "GNU hash table"),
        (elf::DT_RELA, elf::DT_RELASZ, "relocation table"),
        (elf::DT_REL, elf::DT_RELSZ, "relocation table"),
        (elf::DT_JMPREL, elf::DT_PLTRELSZ, "PLT relocation table"),
        (DT_RELR, DT_RELRSZ, "relative relocation table"),
        (
            elf::DT_INIT_ARRAY,
            elf::DT_INIT_ARRAYSZ,
            "initialiser array",
        ),
        (elf::DT_FINI_ARRAY, elf::DT_FINI_ARRAYSZ, "finaliser array"),
        (elf::DT_INIT, 0, "initialiser"),
        (elf::DT_FINI, 0, "finaliser"),
        (elf::DT_VERSYM, 0, "symbol versions"),
        (elf::DT_VERDEF, 0, "version definitions"),
        (elf::DT_VERNEED, 0, "version needs"),
        (elf::DT_PLTGOT, 0, "global offset table"),
    ];
    for &(tag, size_tag, what) in tables {
        let Some(address) = value(tag) else {
            continue;
        };
        let size = if size_tag == 0 {
            1
        } else {
            value(size_tag).unwrap_or(0)
        };
        if !mapped(address, size) {
            return Err(format!(
                "the dynamic section's {what} ({size} bytes at {address:#x}) lies outside every loadable segment"
            ));
        }
    }
    Ok(())
}

/// A PE file (Windows): a library for Windows programs (the GUI or console subsystem: not a
/// driver, an EFI image or a boot application, which `LoadLibrary` would refuse or misload),
/// then what [`check_any`] checks.
#[cfg(windows)]
fn check_pe<'data, R: ReadRef<'data>>(data: R, len: u64) -> Result<(), Problem> {
    const GUI: u16 = 2;
    const CONSOLE: u16 = 3;
    let subsystem = pe_subsystem(data).ok_or_else(|| {
        Problem::Other("its PE headers are cut short (no subsystem field)".to_owned())
    })?;
    if subsystem != GUI && subsystem != CONSOLE {
        let what = match subsystem {
            1 => "a native (driver) image",
            10 => "an EFI application",
            11 | 12 => "an EFI driver",
            13 => "an EFI ROM image",
            16 => "a Windows boot application",
            _ => "an image for another subsystem",
        };
        return Err(Problem::Other(format!(
            "it is {what} (PE subsystem {subsystem}), not a library Windows programs load"
        )));
    }
    check_any(data, len)
}

/// Any other format the `object` crate reads (Mach-O on macOS): a full parse.
fn check_any<'data, R: ReadRef<'data>>(data: R, len: u64) -> Result<(), Problem> {
    let file = object::File::parse(data)?;
    if file.kind() != object::ObjectKind::Dynamic {
        return Err(not_a_shared_library(file.kind()));
    }
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        if let Some(problem) = outside("a segment", offset, size, len) {
            return Err(problem);
        }
    }
    for section in file.sections() {
        if let Some((offset, size)) = section.file_range() {
            let what = format!("section {}", section.name().unwrap_or("?"));
            if let Some(problem) = outside(&what, offset, size, len) {
                return Err(problem);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PE file marked an EFI application is refused for that, before anything else.
    #[cfg(windows)]
    #[test]
    fn a_pe_library_for_another_subsystem_is_refused() {
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&exe).unwrap();
        let pe = u32::from_le_bytes(bytes[0x3c..0x40].try_into().unwrap()) as usize;
        let mut efi = bytes.clone();
        efi[pe + 4 + 20 + 68..pe + 4 + 20 + 70].copy_from_slice(&10u16.to_le_bytes());
        let message = check_library(efi.as_slice()).unwrap_err();
        assert!(
            message.contains("an EFI application (PE subsystem 10)"),
            "{message}"
        );
    }

    #[test]
    fn junk_and_empty_files_are_refused() {
        assert_eq!(check_library(&b""[..]).unwrap_err(), "the file is empty");
        assert!(check_library(&b"hello world"[..])
            .unwrap_err()
            .contains("not an object file"));
    }

    /// A Mach-O dylib whose last segment has no sections, as every linked dylib's
    /// `__LINKEDIT` does: the reader must accept it (it did not without object's `unaligned`).
    #[test]
    fn a_macho_dylib_with_a_sectionless_segment_is_sound() {
        let mut bytes = Vec::new();
        // mach_header_64: magic, CPU_TYPE_ARM64, subtype, MH_DYLIB, 1 command of 72 bytes.
        for word in [0xfeed_facf_u32, 0x0100_000c, 0, 6, 1, 72, 0, 0] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        // segment_command_64: LC_SEGMENT_64, 72 bytes, "__LINKEDIT", all sizes 0, no sections.
        bytes.extend_from_slice(&0x19u32.to_le_bytes());
        bytes.extend_from_slice(&72u32.to_le_bytes());
        bytes.extend_from_slice(b"__LINKEDIT\0\0\0\0\0\0");
        bytes.extend_from_slice(&[0; 72 - 24]);
        assert_eq!(bytes.len(), 32 + 72);
        assert_eq!(check_library(bytes.as_slice()), Ok(()));
    }

    /// The layout checks call no real library damaged: every shared library of the system's.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_systems_own_libraries_pass_the_layout_checks() {
        let mut checked = 0;
        for dir in [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/lib64",
            "/usr/lib64",
        ] {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !name.contains(".so") || !entry.path().is_file() {
                    continue;
                }
                let Ok(bytes) = std::fs::read(entry.path()) else {
                    continue;
                };
                if let Err(message) = check_library(bytes.as_slice()) {
                    assert!(!message.contains("damaged"), "{name}: {message}");
                }
                checked += 1;
            }
        }
        eprintln!("{checked} system libraries checked");
    }

    #[test]
    fn the_running_test_binary_is_not_a_shared_library_or_is_sound() {
        // Test executables are PIE (kind Executable or Dynamic depending on the toolchain): the
        // check must not call a sound file truncated.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        if let Err(message) = check_library(exe.as_slice()) {
            assert!(message.contains("not a shared library"), "{message}");
        }
        let truncated = &exe[..exe.len() / 2];
        let message = check_library(truncated).unwrap_err();
        assert!(
            message.contains("truncated")
                || message.contains("not an object file")
                || message.contains("not a shared library"),
            "{message}"
        );
    }
}
