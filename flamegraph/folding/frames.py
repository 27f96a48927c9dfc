"""Name one `perf script` frame line, and the one cache of frame lines every folder shares.

Frame lines it names (leading whitespace and the address vary; the line end is never part of it):
    \t    7f0c1a2b3c4d std::_Function_handler<void (std::shared_ptr<X>), F>::_M_invoke+0x1d (/lib/libmxnet.so)
    \t    ffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])
    \t    7f00 foo+0x1->bar+0x2 (inlined)
    7f12 PyEval_Eval+0x3 (/usr/bin/python3)        <- the frame on a header line (recorded without -g)

A recording repeats a few thousand distinct frame lines millions of times, so a line is named once
and looked up by its raw bytes afterwards. New lines come in batches (`FrameNames.name_all`): the
addresses of a whole batch are cut off by one regex pass, and a line whose rest was named before (the
same function and offset at another address: another process, another copy of a library) takes that
name without a call per line; lines that differ only in address and offset share a third cache keyed
by what is left.
"""

from __future__ import annotations

import re
from itertools import compress
from operator import not_

from . import tidy
from .grammar import FRAME_WITHOUT_DSO, as_inlined, dso_opening, match_reference, srcline_suffix
from .options import FoldOptions

UNKNOWN_DSO = b"[unknown]"  # what perf prints for a frame without a mapping; also ours for -F without dso
FRAME_HEAD = re.compile(rb"^\s*(\w+)\s*(.+)$")
# The usual frame line whole: what `split_frame` finds in it the long way (the DSO has no parentheses,
# so its ' (' is the line's last; the address is one word, the symbol starts after one blank).
USUAL_FRAME = re.compile(rb"\t[ \t]*+([0-9a-f]{2,}+) ([^\s(][^\n]*) \(([^()\n]*)\)\Z")
HEX_DIGITS = frozenset(b"0123456789abcdef")
# The usual frame line's head, after the b'\n' before it: a tab, blanks, an address of two digits or
# more, one blank, then a rest that starts with neither a blank nor '(' (on such a line every parse
# below depends on the rest alone, never on the address: `name_all` relies on it, and a property test
# holds it). It starts with a literal, which the regex engine searches for; `^` under MULTILINE would
# be tried at every position (3x the instructions on a batch of lines).
LINE_ADDRESS = re.compile(rb"\n\t[ \t]*+[0-9a-f]{2,}+ (?=[^\s(])")
# In rests of usual lines, one per line: the offset `symbol_key` cuts ('+0x<hex>' ending a non-empty
# symbol, before the last ' (' of a line that ends with ')'), so rests alike but for it share a name.
# Stricter than symbol_key where it is cheaper (no parenthesis in the DSO): a rest it leaves whole
# is still its own key. '+0x' first: the regex engine skips to it rather than trying every position.
SYMBOL_OFFSET = re.compile(rb"\+0x(?<=[^\n]\+0x)[0-9a-f]++(?= \([^\n()]*+\)(?:\n|\Z))")


def split_frame(text: bytes, compat: bool) -> tuple[bytes, bytes, bytes] | None:
    """'<addr> <symbol> (<dso>)' -> (addr, symbol, dso); the DSO is the last balanced (...) group."""
    if not compat and (usual := USUAL_FRAME.match(text)) is not None:
        return usual.groups()  # type: ignore[return-value]
    groups = match_reference(text)
    if groups is None and not compat:
        # -F ip,sym: perf printed no DSO ('<addr> <symbol>'); the reference cannot read it
        bare = FRAME_WITHOUT_DSO.match(text)
        return (bare.group(1), bare.group(2), UNKNOWN_DSO) if bare is not None else None
    if groups is None or compat:
        return groups
    body = text.rstrip()
    opening = dso_opening(body)
    if opening < 0:
        # -F ip,sym: no DSO, whatever ' (' the symbol holds ('std::_Function_handler<double (double), F>::_M_invoke')
        bare = FRAME_WITHOUT_DSO.match(text)
        return (bare.group(1), bare.group(2), UNKNOWN_DSO) if bare is not None else groups
    if len(body) - len(groups[2]) - 2 == opening:
        return groups  # the usual case: the reference's last group is the whole DSO
    # As the reference: the symbol ends before the " (" that opens the DSO group.
    head = FRAME_HEAD.match(body[: opening - 1])
    return (head.group(1), head.group(2), body[opening + 1 : -1]) if head is not None else groups


def name_frame(line: bytes, options: FoldOptions, java: bool = False) -> bytes | None:
    """Folded text of one frame line: b'' for a frame the reference drops, None if malformed.

    `java`: the sample's process is a JVM (Java's tidy rules apply). Inlined frames come out
    joined by ';', caller first, as perf lists them ('outer->inner'). A line with its source line
    joined to it (`script.join_srclines`, --srcline) is named with ':file:line' after the frame."""
    source = b""
    if line.find(b"\n") >= 0:  # find, not `in`: see perf_blocks._add_waiting
        line, _, src = line.partition(b"\n")
        source = srcline_suffix(src) if options.srcline else b""
    parts = split_frame(line, options.compat)
    if parts is None:
        return None
    pc, raw, dso = parts
    raw = tidy.OFFSET.sub(b"", raw)
    if raw.startswith(b"(") and (options.compat or not raw.startswith(tidy.ANONYMOUS_NAMESPACE)):
        return b""  # the reference drops "(...)" names as process names
    if options.frame_hook is not None and not options.compat:
        raw = options.frame_hook(pc, raw, dso) or raw
    if not options.compat and (python := tidy.python_frame(raw)) is not None:
        return python  # perf's py::main:/x/t.py read as `main (t.py)`; not a JIT kernel (no _[j])
    pieces = raw.split(b"->")
    while pieces and not pieces[-1]:
        pieces.pop()  # as Perl's split: no trailing empty fields ("x->" is x; "->" is no frame at all)
    if not pieces:
        return b""
    names = []
    for i, name in enumerate(pieces):
        if name == b"[unknown]":
            name = dso.rsplit(b"/", 1)[-1] if dso != b"[unknown]" else b"unknown"
            name = b"[" + name + (b" <" + pc + b">" if options.addrs else b"") + b"]"
        name = tidy.tidy_name(name, java, options.compat)
        if i > 0 or (dso == b"inlined" and not options.compat):
            if name.find(b"_[i]") < 0:
                name += b"_[i]"
        elif options.annotate_kernel and tidy.is_kernel_dso(dso, options.compat):
            name += b"_[k]"
        elif options.annotate_jit and tidy.is_jit_dso(dso, options.compat) and name.find(b"_[j]") < 0:
            name += b"_[j]"
        names.append(name)
    if source:  # the reference reads one source line per inlined piece: the first piece takes it
        index = 0 if options.compat else len(names) - 1
        names[index] += b":" + source
    return b";".join(names)


def symbol_key(line: bytes, java: bool, addrs: bool, hooked: bool = False) -> bytes | None:
    """'<addr> <sym>+0x<off> (<dso>)' -> b'<sym> (<dso>)' (+ java flag); None when unsure."""
    body = line.strip()
    space = body.find(b" ")
    paren = dso_opening(body) - 1
    # Only '... (<dso>)': a line without it is named by whether its address is hex (-F ip,sym), so lines
    # alike past the address may fold differently (a batch named them in another order: a property test)
    if space <= 0 or paren <= space or not body[:space].isalnum():
        return None
    symbol = body[space + 1 : paren].lstrip()
    if not symbol:  # a blank symbol is named from its blanks ('7  (dso)', '7 \t (dso)'): no key shared by both
        return None
    # --addrs prints the address; a frame hook may name each address differently
    if (addrs or hooked) and symbol.find(b"[unknown]") >= 0 and (addrs or not body.endswith(b" ([unknown])")):
        return None
    plus = symbol.rfind(b"+0x")
    if plus > 0 and len(symbol) > plus + 3 and HEX_DIGITS.issuperset(symbol[plus + 3 :]):
        symbol = symbol[:plus]
    return (b"J" if java else b"-") + symbol + body[paren:]


class FrameNames:
    """The frame-line cache: raw line (without its line end) -> folded name, one table per tidy rule set.

    `plain` and `java` map lines to non-empty names only, so a fold can look a whole record up with
    `map(table.get, lines)` and treat None as "not named yet". Lines that fold to nothing (frames the
    reference drops; kernel frames when `drop_kernel`) are remembered apart.
    """

    def __init__(self, options: FoldOptions, drop_kernel: bool = False) -> None:
        self.options = options
        self.drop_kernel = drop_kernel
        self.plain: dict[bytes, bytes] = {}
        self.java: dict[bytes, bytes] = {}
        self._dropped: set[bytes] = set()
        self._symbols: dict[bytes, bytes] = {}  # frame line without address and offset -> name
        # frame line past its address (LINE_ADDRESS) and offset (SYMBOL_OFFSET) -> name (b'' dropped), one per
        # tidy rule set; only when the address cannot change a name: no frame hook (it is given the address), no --addrs
        self._rests: tuple[dict[bytes, bytes], dict[bytes, bytes]] | None = (
            ({}, {}) if options.frame_hook is None and not options.addrs and not options.compat else None
        )

    def table(self, java: bool) -> dict[bytes, bytes]:
        return self.java if java else self.plain

    def name_all(self, lines: list[bytes], java: bool = False, joined: bytes | None = None) -> None:
        """Name new frame lines (without line ends, none held yet, no two alike) as `name` does, into
        the table; a malformed line stays out of it.

        A system-wide recording sees a new line in most records (the same function at another address
        in each process, at another offset in it), so this is the hot part of its fold: lines whose
        rest past the address (and offset) was named before are added by C loops, no Python step each.
        `joined`: b'\\n' + b'\\n'.join(lines), from a caller that found every line tab-indented (each
        check is a pass over the batch)."""
        rests = self._rests
        if not lines:
            return
        if rests is None:
            for line in lines:
                self.name(line, java)
            return
        if joined is None:
            joined = b"\n" + b"\n".join(lines)
            if joined.count(b"\n\t") != len(lines) or joined.count(b"\n") != len(lines):
                for line in lines:  # a line without a tab head could be taken for a rest (or holds a b'\n')
                    self.name(line, java)
                return
        # A line of another shape keeps its head (a tab): it is its own key, never a rest's, never kept.
        joined = SYMBOL_OFFSET.sub(b"", LINE_ADDRESS.sub(b"\n", joined))
        keys = joined.split(b"\n")
        del keys[0]
        by_key = rests[java]
        names = list(map(by_key.get, keys))
        table = self.java if java else self.plain
        table.update(compress(zip(lines, names, strict=True), names))  # type: ignore[arg-type]  # named ones, in C
        if all(names):
            return
        for line, key, name in compress(zip(lines, keys, names, strict=True), map(not_, names)):
            if name is None:
                name = by_key.get(key)  # named by a line before it in this batch
                if name is None:
                    usual = key[:1] != b"\t"
                    name = self.name(line, java, keyed=usual)
                    if name is not None and usual:
                        by_key[key] = name
                    continue
                if name:
                    table[line] = name
                    continue
            self._dropped.add(line)

    def name(self, line: bytes, java: bool = False, keyed: bool = False) -> bytes | None:
        """Name a line the table does not hold yet: b'' for frames to drop, None if malformed.

        `keyed`: the caller keys its names by the line's rest already (`name_all`), so the second
        cache below would only cost its key (a tenth of naming a new function)."""
        if line in self._dropped:
            return b""
        options = self.options
        # Lines differing only in address and offset ("7f01 work+0x34 (/t)", "7f09 work+0x3c (/t)")
        # fold to the same name: key a second cache by what is left.
        key = None if keyed else symbol_key(line, java, options.addrs, options.frame_hook is not None)
        name = self._symbols.get(key) if key is not None else None
        if name is None:
            if self.drop_kernel:
                parts = split_frame(line, options.compat)
                if parts is not None and tidy.is_kernel_dso(parts[2]):
                    self._dropped.add(line)
                    return b""
            name = name_frame(line, options, java)
            if name and key is not None:
                self._symbols[key] = name
        if name:
            (self.java if java else self.plain)[line] = name
        elif name == b"":
            self._dropped.add(line)
        return name

    def name_inlined(self, line: bytes, java: bool, name: bytes) -> bytes:
        """The name of frame `line` (named `name`) when the source line after it says it is inlined
        (`  prog.c:8 (inlined)`): perf then prints the frame without its DSO, where plain `perf script`
        prints `(inlined)`. Named as that plain line is, so both fold alike."""
        if dso_opening(line.rstrip()) < 0:  # printed without its DSO
            return self.name(as_inlined(line), java) or name
        return name if not name or name.find(b"_[i]") >= 0 else name + b"_[i]"
