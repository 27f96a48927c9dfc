"""Text in the SVG: safe display names, numbers, and labels cut to fit a width without a browser.

Frame names are whatever the profiled program holds; they may carry bytes that are not UTF-8
(kept as surrogate escapes by the folded reader) or control characters that XML 1.0 forbids even
as character references. Those are shown as `\\xNN`, everything else is left to autoescaping.
"""

from __future__ import annotations

import math
import re

# Characters XML 1.0 cannot carry, plus lone surrogates (undecodable bytes from surrogateescape).
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")

# Advance widths in em, on the wide side of Verdana and DejaVu Sans, so a label fitted here never
# overflows its frame; the script refits labels with the browser's own measurements.
NARROW = frozenset("iIl.,:;'|!` ")
SEMI = frozenset('fjrt()[]{}/\\-"*')
WIDE = frozenset("mwMW@%&")
SYMBOL = frozenset("<>=+~^#_")
WIDTHS = {"narrow": 0.36, "semi": 0.48, "wide": 1.1, "symbol": 0.86, "upper": 0.8, "other": 0.66, "foreign": 1.05}
ELLIPSIS = ".."


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def display_name(name: str) -> str:
    """The name as the SVG shows it: unchanged unless it holds bytes XML cannot carry."""
    if UNSAFE.search(name) is None:
        return name
    return UNSAFE.sub(_escape_char, name)


def format_count(value: float) -> str:
    """1234567 -> '1,234,567'; fractions keep up to two decimals."""
    if value == int(value) and abs(value) < 1e18:
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


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


def text_width(text: str, font_size: float) -> float:
    return sum(map(char_em, text)) * font_size


def fit_label(text: str, width: float, font_size: float) -> str:
    """`text`, or its longest prefix + '..' that fits in `width` pixels, or '' if not even one char."""
    if width <= 0:
        return ""
    budget = width / font_size
    if len(text) * WIDTHS["foreign"] <= budget:  # fits whatever the characters
        return text
    used = 0.0
    widths = []
    for char in text:
        em = char_em(char)
        used += em
        widths.append(em)
        if used > budget:
            break
    else:
        return text
    room = budget - 2 * WIDTHS["narrow"]
    used = 0.0
    cut = 0
    for em in widths:
        if used + em > room:
            break
        used += em
        cut += 1
    return text[:cut] + ELLIPSIS if cut else ""


def wrap(text: str, width: float, font_size: float) -> list[str]:
    """Split `text` into lines of at most `width` pixels (by the same wide estimate), never dropping text."""
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


def clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value)) if math.isfinite(value) else low
