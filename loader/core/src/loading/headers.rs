//! A library file's headers, read without loading it: the one place this crate parses an
//! object file (ELF, Mach-O and PE, with the `object` crate; PE's few fields by hand, since
//! `object`'s PE reader is built in on Windows only).
//!
//! Each reader here answers one question and reads only the headers and small parts that
//! answer it, never running anything of the file: which plugin API the library names
//! ([`read_api_marker`]: `export_plugin!` exports the version as plain bytes under
//! `VERSION_MARKER_SYMBOL`, so the host can refuse an incompatible plugin before `dlopen` runs
//! any of its code; for ELF only the dynamic symbol table is read), its build-id
//! ([`build_id`]), the glibc versions it needs ([`glibc_versions_needed`]), the machine it is
//! for ([`machine_of`]), a PE file's subsystem. What the answers mean is decided above: `preflight` (is the file
//! sound), `platform` (was it built for this host), `open` (is its API one this host loads).

use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};
use object::read::macho::{FatArch, MachHeader, MachOFatFile32, MachOFatFile64};
use object::{elf, macho, Endianness, FileKind, Object, ObjectSection, ObjectSymbol, ReadRef};
use xcsh_plugin_api::ffi::{
    parse_version_marker, ROOT_MODULE_SYMBOL, VERSION_MARKER_LEN, VERSION_MARKER_SYMBOL,
};

/// An ELF file's header and byte order: the first step of every ELF reader here.
fn elf_header<'data, H, R>(data: R) -> Option<(&'data H, Endianness)>
where
    H: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let header = H::parse(data).ok()?;
    Some((header, header.endian().ok()?))
}

/// The machine a library's headers say it is for, as each format spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Machine {
    /// A PE file's `Machine` field.
    Pe { machine: u16 },
    /// An ELF file's class (`kind`), OS ABI, `e_machine`, class and byte order.
    Elf {
        kind: FileKind,
        os_abi: u8,
        machine: u16,
        is_64: bool,
        little: bool,
    },
    /// A Mach-O file's CPU type, or each slice's of a universal file.
    MachO { kind: FileKind, cpus: Vec<u32> },
}

/// What `data`'s headers say it was built for; `None` for a file of no format read here, or
/// one whose headers are cut short.
pub(crate) fn machine_of<'data, R: ReadRef<'data>>(data: R) -> Option<Machine> {
    if let Some(machine) = pe_machine(data) {
        return Some(Machine::Pe { machine });
    }
    let kind = FileKind::parse(data).ok()?;
    let cpus = match kind {
        FileKind::Elf64 => return elf_machine::<elf::FileHeader64<Endianness>, R>(data, kind),
        FileKind::Elf32 => return elf_machine::<elf::FileHeader32<Endianness>, R>(data, kind),
        FileKind::MachO64 => vec![macho_cpu::<macho::MachHeader64<Endianness>, R>(data)?],
        FileKind::MachO32 => vec![macho_cpu::<macho::MachHeader32<Endianness>, R>(data)?],
        FileKind::MachOFat64 => fat_cpus(MachOFatFile64::parse(data).ok()?.arches()),
        FileKind::MachOFat32 => fat_cpus(MachOFatFile32::parse(data).ok()?.arches()),
        _ => return None,
    };
    Some(Machine::MachO { kind, cpus })
}

fn elf_machine<'data, H, R>(data: R, kind: FileKind) -> Option<Machine>
where
    H: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let (header, endian) = elf_header::<H, R>(data)?;
    Some(Machine::Elf {
        kind,
        os_abi: header.e_ident().os_abi,
        machine: header.e_machine(endian),
        is_64: header.is_class_64(),
        little: header.is_little_endian(),
    })
}

fn macho_cpu<'data, H, R>(data: R) -> Option<u32>
where
    H: MachHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let header = H::parse(data, 0).ok()?;
    Some(header.cputype(header.endian().ok()?))
}

fn fat_cpus<A: FatArch>(arches: &[A]) -> Vec<u32> {
    arches.iter().map(FatArch::cputype).collect()
}

/// The version names (`GLIBC_2.34`, ...) an ELF library's version needs name, from all the
/// libraries it needs them of; empty without version needs. `kind` is the file's class
/// (`FileKind::Elf64` or `Elf32`; anything else reads nothing).
pub(crate) fn glibc_versions_needed<'data, R: ReadRef<'data>>(
    data: R,
    kind: FileKind,
) -> Vec<&'data [u8]> {
    match kind {
        FileKind::Elf64 => versions_needed::<elf::FileHeader64<Endianness>, R>(data),
        FileKind::Elf32 => versions_needed::<elf::FileHeader32<Endianness>, R>(data),
        _ => None,
    }
    .unwrap_or_default()
}

fn versions_needed<'data, H, R>(data: R) -> Option<Vec<&'data [u8]>>
where
    H: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let (header, endian) = elf_header::<H, R>(data)?;
    let sections = header.sections(endian, data).ok()?;
    let (mut needs, link) = sections.gnu_verneed(endian, data).ok()??;
    let strings = sections.section(link).ok()?.strings(endian, data).ok()??;
    let mut names = Vec::new();
    while let Ok(Some((_file, mut aux))) = needs.next() {
        while let Ok(Some(version)) = aux.next() {
            if let Ok(name) = version.name(endian, strings) {
                names.push(name);
            }
        }
    }
    Some(names)
}

/// What the file says about the `xcsh-plugin-api` it was built against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApiMarker {
    /// The version text of its marker (not yet checked against the host's policy).
    Version(String),
    /// An abi_stable root module but no marker: built against xcsh-plugin-api 0.1, or by
    /// hand.
    Unmarked,
    /// Neither a marker nor a root module: not an xcsh plugin.
    NoRootModule,
}

/// Read the version marker of a library whose headers `preflight::check_library` accepted. Nothing is
/// loaded or run.
pub(crate) fn read_api_marker<'data, R: ReadRef<'data>>(data: R) -> ApiMarker {
    match FileKind::parse(data) {
        Ok(FileKind::Elf64) => elf_marker::<elf::FileHeader64<Endianness>, R>(data),
        Ok(FileKind::Elf32) => elf_marker::<elf::FileHeader32<Endianness>, R>(data),
        _ => any_marker(data),
    }
    .unwrap_or(ApiMarker::NoRootModule)
}

/// Whether a symbol's name is `wanted` (Mach-O prefixes C symbol names with an underscore).
fn named(wanted: &str, name: &[u8]) -> bool {
    let wanted = wanted.as_bytes();
    name == wanted || name.strip_prefix(b"_") == Some(wanted)
}

fn marker_from(bytes: &[u8], has_root: bool) -> ApiMarker {
    match parse_version_marker(bytes) {
        Some(version) => ApiMarker::Version(version.to_owned()),
        None if has_root => ApiMarker::Unmarked,
        None => ApiMarker::NoRootModule,
    }
}

fn elf_marker<'data, H, R>(data: R) -> Option<ApiMarker>
where
    H: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let (header, endian) = elf_header::<H, R>(data)?;
    let sections = header.sections(endian, data).ok()?;
    let symbols = sections.symbols(endian, data, elf::SHT_DYNSYM).ok()?;
    let mut has_root = false;
    let mut marker = None;
    for symbol in symbols.iter() {
        if symbol.st_shndx(endian) == elf::SHN_UNDEF {
            continue;
        }
        let Ok(name) = symbols.symbol_name(endian, symbol) else {
            continue;
        };
        if named(ROOT_MODULE_SYMBOL, name) {
            has_root = true;
        } else if named(VERSION_MARKER_SYMBOL, name) {
            marker = Some(symbol);
        }
    }
    let Some(symbol) = marker else {
        return Some(marker_from(&[], has_root));
    };
    // The marker's bytes: its address within the section that holds it, as a file offset.
    let section = sections
        .section(object::SectionIndex(usize::from(symbol.st_shndx(endian))))
        .ok()?;
    let address: u64 = symbol.st_value(endian).into();
    let start: u64 = section.sh_addr(endian).into();
    let offset: u64 = section.sh_offset(endian).into();
    let within = address.checked_sub(start)?;
    let bytes = data
        .read_bytes_at(offset.checked_add(within)?, VERSION_MARKER_LEN as u64)
        .ok()?;
    Some(marker_from(bytes, has_root))
}

/// Any other format (Mach-O, PE): a full parse. A PE library's names are in its export table
/// (a stripped one has no symbol table at all).
fn any_marker<'data, R: ReadRef<'data>>(data: R) -> Option<ApiMarker> {
    let file = object::File::parse(data).ok()?;
    if let Some(marker) = export_marker(&file) {
        return Some(marker);
    }
    let mut has_root = false;
    for symbol in file.dynamic_symbols().chain(file.symbols()) {
        let Ok(name) = symbol.name_bytes() else {
            continue;
        };
        if !symbol.is_definition() {
            continue;
        }
        if named(ROOT_MODULE_SYMBOL, name) {
            has_root = true;
        }
        if !named(VERSION_MARKER_SYMBOL, name) {
            continue;
        }
        let object::SymbolSection::Section(index) = symbol.section() else {
            continue;
        };
        let section = file.section_by_index(index).ok()?;
        if let Some(bytes) = section
            .data_range(symbol.address(), VERSION_MARKER_LEN as u64)
            .ok()
            .flatten()
        {
            return Some(marker_from(bytes, true));
        }
    }
    Some(marker_from(&[], has_root))
}

/// The marker as a PE library's export table names it (`None` for other formats: their names
/// are in their dynamic symbols).
fn export_marker<'data, R: ReadRef<'data>>(file: &object::File<'data, R>) -> Option<ApiMarker> {
    if file.format() != object::BinaryFormat::Pe {
        return None;
    }
    let exports = file.exports().ok()?;
    let has_root = exports
        .iter()
        .any(|export| named(ROOT_MODULE_SYMBOL, export.name()));
    let marker = exports
        .iter()
        .find(|export| named(VERSION_MARKER_SYMBOL, export.name()))
        .and_then(|export| {
            file.sections().find_map(|section| {
                section
                    .data_range(export.address(), VERSION_MARKER_LEN as u64)
                    .ok()
                    .flatten()
            })
        });
    Some(marker_from(marker.unwrap_or(&[]), has_root))
}

/// The library's GNU build-id (the ELF `NT_GNU_BUILD_ID` note the linker writes, a hash
/// naming the build), when it has one. Only the headers and the note segments are read.
pub(crate) fn build_id<'data, R: ReadRef<'data>>(data: R) -> Option<Vec<u8>> {
    match FileKind::parse(data).ok()? {
        FileKind::Elf64 => elf_build_id::<elf::FileHeader64<Endianness>, R>(data),
        FileKind::Elf32 => elf_build_id::<elf::FileHeader32<Endianness>, R>(data),
        _ => None,
    }
}

fn elf_build_id<'data, Elf, R>(data: R) -> Option<Vec<u8>>
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let (header, endian) = elf_header::<Elf, R>(data)?;
    for segment in header.program_headers(endian, data).ok()? {
        let Ok(Some(mut notes)) = segment.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
                return Some(note.desc().to_vec());
            }
        }
    }
    None
}

/// Where a PE file's `PE\0\0` signature is (`MZ`, then the offset the DOS header holds), if
/// it is one. By hand: the `object` crate's PE reader is built in on Windows only.
fn pe_signature_offset<'data, R: ReadRef<'data>>(data: R) -> Option<u64> {
    if data.read_bytes_at(0, 2).ok()? != b"MZ" {
        return None;
    }
    let offset = u32::from_le_bytes(data.read_bytes_at(0x3c, 4).ok()?.try_into().ok()?);
    let offset = u64::from(offset);
    (data.read_bytes_at(offset, 4).ok()? == b"PE\0\0").then_some(offset)
}

/// The machine of a PE file (the file header's first field, after the signature).
fn pe_machine<'data, R: ReadRef<'data>>(data: R) -> Option<u16> {
    let offset = pe_signature_offset(data)?;
    let machine = data.read_bytes_at(offset + 4, 2).ok()?;
    Some(u16::from_le_bytes([machine[0], machine[1]]))
}

/// The `Subsystem` field of a PE file's optional header: at the same offset (68) in PE32 and
/// PE32+, after the 4-byte signature and the 20-byte file header.
#[cfg(windows)]
pub(crate) fn pe_subsystem<'data, R: ReadRef<'data>>(data: R) -> Option<u16> {
    let at = pe_signature_offset(data)?.checked_add(4 + 20 + 68)?;
    let field = data.read_bytes_at(at, 2).ok()?;
    Some(u16::from_le_bytes([field[0], field[1]]))
}
