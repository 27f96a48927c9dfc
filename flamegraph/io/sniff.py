"""What an input is, from its first bytes: so `render` on `perf script` text, or `fold` on an SVG,
says what the file is and which command reads it, instead of a page of malformed-line reports.

Only confident answers: a file this cannot place is left to the reader it was given to. Heads it tells:
    python 19065/19130  1252.178187: cpu-clock:          <- perf script (a header, then frame lines;
    \t    7f0c1a2b3c4d PyEval_EvalFrame+0x3d (/usr/bin/python3.11)    any layout fold reads: grammar.starts_sample)
    python;_start;main;compute 17                          <- folded stacks
    <?xml version="1.0" ...?><svg ...                      <- an SVG (a drawn graph)
"""

from __future__ import annotations

import re
import zlib

from ..folding.grammar import FRAME_LINE, is_detail, is_non_sample, starts_sample
from .inputs import PERF_DATA_MAGIC

PERF_SCRIPT = "perf script output"
FOLDED = "folded stacks"
SVG = "an SVG (a drawn flame graph)"
PERF_DATA = "a perf.data file"
JSON = "JSON"
BINARY = "binary data"
HEAD_BYTES = 64 * 1024
BINARY_SHARE = 0.3  # of the head's bytes: control characters or bytes that are not UTF-8
TEXT_CONTROLS = b"\t\n\r\f\v\b\x1b"  # controls text may hold (\x1b: a terminal's colour codes)
CONTROLS = bytes(c for c in range(32) if bytes([c]) not in TEXT_CONTROLS) + b"\x7f"
LAST_COUNT = re.compile(rb" \d+(?:\.\d*)?\Z")  # one candidate only: the line's last ' N' or ' N.N'
BLANK = re.compile(rb"\s")
FOREIGN = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8


def is_folded_line(line: bytes) -> bool:
    """'a;b;c 42' (or 'a;b 1 2', differential), or one frame without blanks: 'main 3'. What
    `^[^\\s;][^\\n]*;[^\\n]* \\d+(?:\\.\\d*)?(?: \\d+(?:\\.\\d*)?)?$|^[^\\s;]\\S* \\d+(?:\\.\\d*)?$`
    matches, in linear time (that regex backtracks quadratically over a long line of '; 1')."""
    body = line[:-1] if line.endswith(b"\n") else line  # `$` also matches before a final newline
    if not body or body[:1] == b";" or BLANK.match(body) or b"\n" in body:
        return False
    count = LAST_COUNT.search(body)
    if count is None:
        return False
    stack = body[: count.start()]  # a second count before it, if any, is part of what [^\n]* takes
    return b";" in stack or BLANK.search(stack) is None


def kind_of_head(head: bytes) -> str | None:
    """PERF_SCRIPT, FOLDED, SVG, PERF_DATA, JSON, BINARY, or None when the head says nothing for sure."""
    if head[:8] in PERF_DATA_MAGIC:
        return PERF_DATA
    if head[:2] == b"\x1f\x8b":
        head = _gunzip_head(head)
    if looks_binary(head):
        return BINARY
    text = head.lstrip()
    if text.startswith((b"<?xml", b"<svg", b"<!DOCTYPE svg")) and b"<svg" in text[:4096]:
        return SVG
    if text[:1] in (b"{", b"["):
        return JSON
    lines = [line for line in head.split(b"\n")[:-1] if line.strip() and not line.startswith(b"#")][:40]
    if not lines:
        return None
    pairs = zip(lines, [*lines[1:], b""], strict=False)  # a header and the line after it
    headers = sum(1 for line, after in pairs if starts_sample(line, after) or is_non_sample(line))
    frames = sum(1 for line in lines if FRAME_LINE.match(line) or is_detail(line))
    folded = sum(1 for line in lines if is_folded_line(line.rstrip(b"\r")))
    if headers and headers + frames >= len(lines) * 0.8:
        return PERF_SCRIPT
    if folded == len(lines):
        return FOLDED
    return None


def looks_binary(head: bytes) -> bool:
    """A NUL byte, or a high share of control characters and bytes that are not UTF-8. Text perf
    prints holds raw bytes in a few symbol names (`caf\xe9_latin1`): those stay far below the share."""
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = len(head) - len(head.translate(None, CONTROLS))
    # surrogateescape turns each byte that is not UTF-8 into one surrogate; a character cut at the end counts too.
    # Counted by a regular expression, not a loop over 64 K characters (25 M instructions, twice per render).
    text = head.decode("utf-8", "surrogateescape")
    foreign = len(text) - len(FOREIGN.sub("", text))
    return controls + foreign > BINARY_SHARE * len(head)


def _gunzip_head(data: bytes) -> bytes:
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, HEAD_BYTES)
    except zlib.error:  # the only error of a zlib stream (gzip.BadGzipFile is the gzip module's)
        return b""


def read_head(path: str) -> bytes:
    """The first bytes of a regular file ('' for anything else: a pipe is never read ahead)."""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return b""
        with open(path, "rb") as stream:
            return stream.read(HEAD_BYTES)
    except OSError:
        return b""
