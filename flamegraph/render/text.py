"""Text in the SVG: safe display names, numbers, and labels cut to fit a width without a browser.

Frame names are whatever the profiled program holds; they may carry bytes that are not UTF-8
(kept as surrogate escapes by the folded reader), control characters that XML 1.0 forbids even as
character references, or characters that change how the text around them displays: bidirectional
controls (U+202E makes `gnp.exe` read as `exe.png`), zero-width and other invisible format
characters, and spaces other than ' '. A name must not display as another name, so each of those
is shown as an escape (`\\xNN`, `\\uNNNN`, `\\UNNNNNNNN`); everything else is left to autoescaping.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache
from itertools import accumulate

# Shown escaped: C1 controls, Unicode format characters (Cf: the bidi controls U+061C, U+200E/F,
# U+202A-E, U+2066-9; zero-width U+200B-D, U+2060, U+FEFF; tags U+E0000...), line and paragraph
# separators, spaces other than U+0020 (Zs), invisible fillers (U+034F, U+115F, U+1160, U+3164,
# U+FFA0), lone surrogates (undecodable bytes) and the non-characters U+FFFE/F; C0 controls below.
# tests/test_render_text.py checks this class against the running Python's Unicode database.
INVISIBLE = (
    "\x7f-\x9f\xa0\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u1680\u180e"
    "\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\ud800-\udfff\ufffe\uffff"
)
ASCII_UNSAFE = re.compile("[\x00-\x1f\x7f]")  # unsafe() for ASCII text (str.isascii() is O(1)): 3x faster
ASCII_UNSAFE_IN_DOCUMENT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Beyond ASCII, our own texts print only these ("cpu-clock · 6,347 samples", "85 µs"), none unsafe:
# a text holding no other non-ASCII character is checked by the ASCII class.
OUR_PUNCTUATION = str.maketrans("", "", "·µ—–→←…×±°")


# The classes below take a millisecond each to compile: only a graph with non-ASCII text pays for them.
@cache
def unsafe() -> re.Pattern[str]:
    """In a name, tab, CR and LF too: they would pass for spaces."""
    return re.compile(f"[\x00-\x1f{INVISIBLE}]")


@cache
def unsafe_in_document() -> re.Pattern[str]:
    """In the whole document (titles, metadata, the template's own line breaks): what XML carries stays."""
    return re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{INVISIBLE}]")


# Advance widths in em, on the wide side of Verdana and DejaVu Sans, so a label fitted here never
# overflows its frame; the script refits labels with the browser's own measurements.
NARROW = frozenset("iIl.,:;'|!` ")
SEMI = frozenset('fjrt()[]{}/\\-"*')
WIDE = frozenset("mwMW@%&")
SYMBOL = frozenset("<>=+~^#_")
WIDTHS = {"narrow": 0.36, "semi": 0.48, "wide": 1.1, "symbol": 0.86, "upper": 0.8, "other": 0.66, "foreign": 1.05}
ELLIPSIS = ".."
# What a line never breaks inside: a word, or a number with its unit ("2.762 s", "12.3 %").
WORDS = re.compile(r"[-+]?\d[\d,.]*\s(?:s|ms|µs|ns|%|MB|KB|GB|Hz|B|KiB|MiB|GiB)(?=[\s,;)]|$)\S*\s*|\S+\s*|\s+")
MIN_PREFIX = 3  # a cut label shows at least this many characters before "..": "M.." says nothing
# Units whose singular the SVG uses for a count of exactly one ("1 sample", not "1 samples").
SINGULAR = {
    "samples": "sample", "microseconds": "microsecond", "nanoseconds": "nanosecond", "events": "event", "bytes": "byte",
    "calls": "call", "cycles": "cycle", "instructions": "instruction", "waits": "wait", "pages": "page",
}  # fmt: skip


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def display_name(name: str) -> str:
    """The name as the SVG shows it: unchanged unless it holds characters that would hide or disguise text."""
    pattern = ASCII_UNSAFE if name.isascii() else unsafe()
    if pattern.search(name) is None:
        return name
    return pattern.sub(_escape_char, name)


def display_text(text: str) -> str:
    """`display_name` for a whole document: tabs and line breaks, which XML carries, are kept."""
    plain = text.isascii() or text.translate(OUR_PUNCTUATION).isascii()
    pattern = ASCII_UNSAFE_IN_DOCUMENT if plain else unsafe_in_document()
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape_char, text)


def format_count(value: float) -> str:
    """1234567 -> '1,234,567'; fractions keep up to two decimals."""
    if value == int(value) and abs(value) < 1e18:
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def count_text(value: float, unit: str) -> str:
    """'1,234 samples', '1 sample'."""
    name = SINGULAR.get(unit, unit) if value == 1 else unit
    return f"{format_count(value)} {name}"


def format_duration_us(microseconds: float) -> str:
    """A duration as people read it: '2.941 s', '12.3 ms', '85 µs'."""
    if abs(microseconds) >= 1e6:
        return f"{microseconds / 1e6:,.3f} s"
    if abs(microseconds) >= 1e3:
        return f"{microseconds / 1e3:.1f} ms"
    return f"{microseconds:.0f} µs"


def format_bytes(value: float) -> str:
    """A size as people read it, in powers of 1024: '512 B', '3.0 KiB', '12.35 MiB', '1.50 GiB'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:,.2f} {unit}"
    return f"{value:,.0f} B"


def format_signed(value: float) -> str:
    text = format_count(abs(value))
    return ("+" if value > 0 else "-" if value < 0 else "±") + text


def format_number(value: float) -> str:
    """Coordinates in the profile's unit: exact for integers, ten significant digits otherwise."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}"


def format_percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.2f}" if whole else "0.00"


def format_seconds(microseconds: float) -> str:
    seconds = microseconds / 1e6
    return f"{seconds:,.3f} s" if seconds < 100 else f"{seconds:,.1f} s"


def char_em(char: str) -> float:
    if char in NARROW:
        return WIDTHS["narrow"]
    if char in SEMI:
        return WIDTHS["semi"]
    if char in WIDE:
        return WIDTHS["wide"]
    if char in SYMBOL:
        return WIDTHS["symbol"]
    if "A" <= char <= "Z":
        return WIDTHS["upper"]
    if char < "\x80":
        return WIDTHS["other"]
    return WIDTHS["foreign"]


# char_em of every ASCII character, so a label's widths are one C-level map over it (a label is
# measured for every frame wide enough to show one: thousands of long C++ names per graph)
ASCII_EMS = [char_em(chr(code)) for code in range(128)]


def _ems(text: str) -> list[float]:
    if text.isascii():
        return list(map(ASCII_EMS.__getitem__, text.encode("ascii")))
    return list(map(char_em, text))


def text_width(text: str, font_size: float) -> float:
    return sum(_ems(text)) * font_size


def fit_label(text: str, width: float, font_size: float, min_prefix: int = 1) -> str:
    """`text`, or its longest prefix + '..' that fits in `width` pixels, or '' if not even
    `min_prefix` characters (frame labels ask for MIN_PREFIX: a label must be readable)."""
    if width <= 0:
        return ""
    budget = width / font_size
    if len(text) * WIDTHS["foreign"] <= budget:  # fits whatever the characters
        return text
    # Only as many characters as could fit are measured: none is narrower than "narrow".
    ems = _ems(text[: int(budget / WIDTHS["narrow"]) + 2])
    ends = list(accumulate(ems))
    if len(ems) == len(text) and ends[-1] <= budget:
        return text
    cut = bisect_right(ends, budget - 2 * WIDTHS["narrow"])  # characters before ".." that fit
    return text[:cut] + ELLIPSIS if cut >= max(1, min_prefix) else ""


def wrap(text: str, width: float, font_size: float) -> list[str]:
    """Split `text` into lines of at most `width` pixels (by the same wide estimate), never dropping text.

    Lines break after a space (or after ', ' and ' · ' lists), never inside a word or a number
    ("2.762 s" stays whole); only a word wider than the line is split where it must be.
    """
    lines: list[str] = []
    line = ""
    used = 0.0
    for word in WORDS.findall(text):
        size = text_width(word.rstrip(), font_size)
        if line and used + size > width:
            lines.append(line.rstrip())
            line, used = "", 0.0
        if not line and size > width:  # one word wider than the line: split it by characters
            pieces = _split_chars(word, width, font_size)
            lines.extend(pieces[:-1])
            line = pieces[-1]
            used = text_width(line, font_size)
            continue
        line += word
        used += text_width(word, font_size)
    lines.append(line.rstrip())
    return lines


def _split_chars(text: str, width: float, font_size: float) -> list[str]:
    lines: list[str] = []
    line = ""
    used = 0.0
    for char in text:
        em = char_em(char) * font_size
        if line and used + em > width:
            lines.append(line)
            line, used = "", 0.0
        line += char
        used += em
    lines.append(line)
    return lines
