#!/usr/bin/env python3
"""glibc-needs.py FLOOR FILE...: the newest GLIBC_x.y symbol version each ELF file needs.

Reads the dynamic symbol table with `readelf -W --dyn-syms` (binutils' readelf reads ELF files
of every architecture) and the version needs (`.gnu.version_r`) with `readelf -W -V`. Prints one
line per file; exits 1 naming the file and the symbols when a file needs a version above FLOOR.
"""

import re
import subprocess
import sys

SYMBOL = re.compile(r"\sUND\s+(\S+?)@+GLIBC_([0-9.]+)")
NEED = re.compile(r"Name:\s+GLIBC_([0-9.]+)")


def version(text):
    return tuple(int(part) for part in text.split("."))


def shown(key):
    return ".".join(str(part) for part in key)


def needs(path):
    """{version: [symbols]} of what `path` needs from glibc."""
    found = {}
    symbols = subprocess.run(
        ["readelf", "-W", "--dyn-syms", path], check=True, capture_output=True, text=True
    ).stdout
    for match in SYMBOL.finditer(symbols):
        found.setdefault(version(match.group(2)), []).append(match.group(1))
    # A version needed without an undefined symbol naming it (rare, but it still binds).
    verneed = subprocess.run(
        ["readelf", "-W", "-V", path], check=True, capture_output=True, text=True
    ).stdout
    for match in NEED.finditer(verneed):
        found.setdefault(version(match.group(1)), [])
    return found


def main():
    floor, files = version(sys.argv[1]), sys.argv[2:]
    failed = False
    for path in files:
        found = needs(path)
        if not found:
            print(f"{path}: needs no versioned glibc symbol")
            continue
        newest = max(found)
        print(f"{path}: GLIBC_{shown(newest)} at most")
        for key in sorted(found):
            if key > floor:
                failed = True
                names = ", ".join(sorted(set(found[key]))) or "(a version need without a symbol)"
                print(
                    f"  ERROR: needs GLIBC_{shown(key)}, above the floor {shown(floor)}: {names}",
                    file=sys.stderr,
                )
    if failed:
        print(f"glibc: some Linux artifacts need more than glibc {shown(floor)} (above)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
