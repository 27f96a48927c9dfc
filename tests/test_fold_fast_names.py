"""The fold's short cuts for naming frame lines give what the long way gives, whatever the line.

`split_frame` reads the usual line with one regex (`USUAL_FRAME`); `FrameNames.name_all` keys a batch
of new lines by their rest past the address and the symbol's offset (`LINE_ADDRESS`, `SYMBOL_OFFSET`),
so that lines alike but for those share one name. Both are checked against the code they stand for,
on lines as perf prints them and worse (offsets upon offsets, parentheses in the DSO, no address).
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from flamegraph import FoldOptions
from flamegraph.folding import frames
from flamegraph.folding.frames import FrameNames, split_frame

HEADS = st.sampled_from([b"\t", b"\t    ", b"\t \t", b"  ", b"\t\x0b", b"", b" \t"])
ADDRESSES = st.sampled_from([b"7", b"7f", b"7f0a1b", b"ffffffff8103d0ca", b"7F0A", b"", b"zz", b"7f_1", b"00"])
RESTS = st.lists(
    st.sampled_from([
        b"main", b"leaf", b"+0x31", b"+0x3g", b"+0x", b"+0x1+0x2", b"+0xab", b"+0XAB", b"[unknown]", b"(x)",
        b" ", b"\t", b"\r", b"(", b")", b" (", b" (/lib/libc.so.6)", b" ([kernel.kallsyms])", b" ([unknown])",
        b" (/tmp/perf-1.map)", b" (inlined)", b" (a(b))", b" (/x (deleted))", b"std::f<void (int)>::g(int)",
        b"a->b", b"py::main:/x/t.py", b"Lorg/Foo;.x", b": ", b"x: 1", b"std::h<double (double), F>::_M_invoke",
        b"{lambda()#1}::operator()", b"f<void (int)>::operator()",
    ]),
    max_size=6,
).map(b"".join)  # fmt: skip
LINES = st.builds(lambda head, address, rest: head + address + b" " + rest, HEADS, ADDRESSES, RESTS)
NEVER = re.compile(rb"(?!)")


@settings(max_examples=500)
@given(LINES)
@example(b"\t7f foo+0x1 (/x (deleted))")
@example(b"\t  7f0a  (/lib/libc.so.6)")
@example(b"\t2ca0 std::h<double (double), F>::_M_invoke+0x1")  # no DSO (-F ip,sym): no USUAL_FRAME either
def test_the_usual_frame_regex_splits_as_the_long_way(line: bytes) -> None:
    fast = split_frame(line, compat=False)
    saved, frames.USUAL_FRAME = frames.USUAL_FRAME, NEVER
    try:
        slow = split_frame(line, compat=False)
    finally:
        frames.USUAL_FRAME = saved
    assert fast == slow


@settings(max_examples=500)
@given(st.lists(LINES, max_size=40), st.integers(1, 8), st.booleans())
@example([b"\t7f a+0x1+0x2 (/x)", b"\t7e a+0x1 (/x)", b"\t7d a (/x)"], 1, False)  # one offset cut, never two
@example([b"\t7f a+0x1 (/x (deleted))", b"\t7e a (/x (deleted))"], 2, False)  # not the DSO's last ' ('
def test_batches_keyed_without_address_and_offset_name_as_one_by_one(
    lines: list[bytes], batches: int, java: bool
) -> None:
    """Whatever the batches (lines met before, in the same batch, in another), a line is named as
    `FrameNames.name` names it alone."""
    lines = list(dict.fromkeys(lines))
    alone = FrameNames(FoldOptions())
    expected = {line: alone.name(line, java) for line in lines}
    size = max(1, len(lines) // batches)
    for given_joined in (False, True):
        batched = FrameNames(FoldOptions())
        for start in range(0, len(lines), size):
            batch = lines[start : start + size]
            joined = b"\n" + b"\n".join(batch)
            # the fold's batches come joined when every line is tab-indented (`perf_blocks._add_waiting`)
            checked = given_joined and joined.count(b"\n\t") == len(batch) == joined.count(b"\n")
            batched.name_all(batch, java, joined if checked else None)
        table = batched.table(java)
        got = {line: table[line] if line in table else batched.name(line, java) for line in lines}
        assert got == expected
