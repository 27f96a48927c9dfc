"""Rust symbols perf left half-demangled (legacy mangling) -> their readable form.

rustc's legacy scheme escapes what a linker symbol may not hold (`<` is `$LT$`, `::` inside a
path element is `..`, `-` is `.`) and appends a hash element. A C++ demangler undoes the
`_ZN...E` wrapper only, so a perf built without Rust support prints, e.g.
    core::ptr::drop_in_place$LT$alloc..vec..Vec$LT$u8$GT$$GT$::h0123456789abcdef
    _$LT$std..fs..File$u20$as$u20$std..io..Read$GT$::read::h5a1b2c3d4e5f6a7b
    std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$::h99887766554433aa
which read as `core::ptr::drop_in_place<alloc::vec::Vec<u8>>`, `<std::fs::File as std::io::Read>::read`
and `std::rt::lang_start::{{closure}}`.

Evidence, as rustc-demangle, libiberty and inferno require it: the name ends with `::h` and 16
lowercase hex digits (using at least 5 distinct digits, as libiberty checks, so `::haaaaaaaaaaaaaaaa`
is a name, not a hash), and everything before it is legacy-mangled text: letters, digits, `_`, `.`,
`:`, and only `$...$` escapes we know. Anything else (Java's `Outer$Inner`, a C++ name with
parameters) is left as it is. The hash is the evidence; escapes alone are not (`A$C$B` is a Java
nested class).
"""

from __future__ import annotations

import re

HASH = re.compile(rb"::h([0-9a-f]{16})$")
MIN_HASH_DIGITS = 5
ESCAPES = {
    b"$SP$": b"@",
    b"$BP$": b"*",
    b"$RF$": b"&",
    b"$LT$": b"<",
    b"$GT$": b">",
    b"$LP$": b"(",
    b"$RP$": b")",
    b"$C$": b",",
}
# `$u` + the hex code of one printable ASCII character ($u20$ space, $u27$ quote, $u7b$ brace...).
PIECE = re.compile(rb"\$(?:SP|BP|RF|LT|GT|LP|RP|C|u([0-9a-f]{2}))\$|\.\.|\.|_(?=\$)|(?:[A-Za-z0-9:]|_(?!\$))+")


def _unescape(match: re.Match[bytes], start_of_element: bool) -> bytes | None:
    """One piece of a mangled element -> its text (None: not legacy mangling after all)."""
    piece = match.group(0)
    if piece == b"..":
        return b"::"
    if piece == b".":
        return b"-"  # rustc writes '-' (as in '->') as a single dot
    if piece == b"_":
        return b"" if start_of_element else piece  # the mangler's '_' before an element starting with '$'
    if piece.startswith(b"$"):
        code = match.group(1)
        if code is None:
            return ESCAPES[piece]
        value = int(code, 16)
        return bytes([value]) if 0x20 <= value < 0x7F else None
    return piece


def demangle_legacy(name: bytes) -> bytes:
    """The readable form of a half-demangled legacy Rust name; any other name unchanged."""
    if name[-19:-16] != b"::h":  # the cheap test first: tidy_name asks about every distinct frame
        return name
    hashed = HASH.search(name)
    if hashed is None or len(set(hashed.group(1))) < MIN_HASH_DIGITS:
        return name
    body = name[: hashed.start()]
    if not body or b"..." in body:
        return name
    out = []
    pos = 0
    for match in PIECE.finditer(body):
        if match.start() != pos:
            return name  # a byte legacy mangling never holds
        text = _unescape(match, pos == 0 or body[pos - 1 : pos] == b":")
        if text is None:
            return name
        out.append(text)
        pos = match.end()
    if pos != len(body):
        return name
    readable = b"".join(out)
    # A name that would still end in a hash is not one we understand; leaving it keeps this idempotent.
    return name if HASH.search(readable) else readable
