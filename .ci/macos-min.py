#!/usr/bin/env python3
"""macos-min.py MAX FILE...: the oldest macOS each Mach-O file runs on (its LC_BUILD_VERSION
`minos`, or LC_VERSION_MIN_MACOSX). Prints one line per file; exits 1 naming the file when it
needs a macOS newer than MAX (zig links for its newest SDK unless MACOSX_DEPLOYMENT_TARGET
says otherwise)."""

import struct
import sys

LC_VERSION_MIN_MACOSX = 0x24
LC_BUILD_VERSION = 0x32


def version(packed):
    return (packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF)


def shown(key):
    major, minor, patch = key
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def minimum(path):
    with open(path, "rb") as file:
        data = file.read()
    magic, _cpu, _sub, _type, ncmds, _size, _flags = struct.unpack_from("<7I", data, 0)
    if magic != 0xFEEDFACF:
        raise SystemExit(f"{path}: not a 64-bit little-endian Mach-O file")
    offset = 32
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<2I", data, offset)
        if cmd == LC_BUILD_VERSION:
            return version(struct.unpack_from("<I", data, offset + 12)[0])
        if cmd == LC_VERSION_MIN_MACOSX:
            return version(struct.unpack_from("<I", data, offset + 8)[0])
        offset += cmdsize
    raise SystemExit(f"{path}: no LC_BUILD_VERSION nor LC_VERSION_MIN_MACOSX")


def main():
    limit = tuple(int(part) for part in (sys.argv[1].split(".") + ["0", "0"])[:3])
    failed = False
    for path in sys.argv[2:]:
        found = minimum(path)
        print(f"{path}: macOS {shown(found)} or later")
        if found > limit:
            failed = True
            print(f"  ERROR: needs macOS {shown(found)}, newer than {shown(limit)}", file=sys.stderr)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
