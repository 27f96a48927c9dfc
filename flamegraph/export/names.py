"""Frame names for formats that hold only Unicode text (JSON, protobuf strings): exact and reversible.

Our frames keep perf's raw bytes (surrogate escapes for bytes that are not UTF-8). JSON and protobuf
strings cannot carry those, so such a byte is written as the four characters `\\xNN`. To keep the
mapping one-to-one, a backslash that would read as the start of such an escape (followed by `x` and
two hex digits) is itself written `\\x5c`. Every other character, `;`, quotes, `<>&`, bidi controls
included, is kept as it is: an export carries the recorded truth; escaping for display is the
viewer's job.

    b"caf\\xe9;f"            -> 'caf\\xe9;f'   (one byte that is not UTF-8)
    'C:\\x41'                -> 'C:\\x5cx41'    (a literal backslash before x41)
    'std::vector<int>'       -> 'std::vector<int>'
"""

from __future__ import annotations

import re

ESCAPE = re.compile(r"\\(?=x[0-9a-fA-F]{2})|[\udc80-\udcff]")
UNESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return "\\x5c" if char == "\\" else f"\\x{ord(char) - 0xDC00:02x}"


def export_name(frame: str) -> str:
    """A frame as valid Unicode: raw bytes as `\\xNN`, an ambiguous backslash as `\\x5c`."""
    if "\\" not in frame and frame.isascii():
        return frame  # the usual case: nothing to look at
    return ESCAPE.sub(_escape, frame)


def import_name(text: str) -> str:
    """The inverse of `export_name`: `\\xNN` back to the byte it stands for (surrogate-escaped)."""
    if "\\x" not in text:
        return text
    out = bytearray()
    pos = 0
    for match in UNESCAPE.finditer(text):
        out += text[pos : match.start()].encode("utf-8", "surrogateescape")
        out.append(int(match.group(1), 16))
        pos = match.end()
    out += text[pos:].encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "surrogateescape")
