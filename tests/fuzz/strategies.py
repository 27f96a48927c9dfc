"""Hypothesis strategies that build fuzz inputs (option bytes + text) shaped like the real thing.

Random bytes rarely get past a parser's first check; these draw lines from small grammars of what
perf, flamegraph.pl and our own tools print (headers, frames, switch records, folded lines,
palette lines, regexes, windows), then damage some of them: cut, doubled, bytes inserted.
"""

from __future__ import annotations

import struct

from hypothesis import strategies as st

OPTION_BYTES = st.binary(min_size=8, max_size=8)

# -- pieces of real inputs --------------------------------------------------------------------------
COMMS = st.sampled_from([b"python", b"java", b"V8 WorkerThread", b"swapper", b"a", b"perf-exec", b"x;y", b"#c",
                         b"\xff\xfe", b"kworker/0:1", b"comm with  spaces", b"\t", b"java 2"])  # fmt: skip
EVENTS = st.sampled_from([b"cpu-clock", b"cycles", b"cycles:u", b"page-faults", b"sched:sched_switch", b"a/b",
                          b"a_b", b"instructions", b""])  # fmt: skip
SYMBOLS = st.sampled_from([
    b"main", b"[unknown]", b"std::vector<int>::at(unsigned long) const", b"operator()", b"(anonymous namespace)::f",
    b"Ljava/lang/Thread;::run", b"foo+0x1f", b"net/http.(*Client).Do", b"a;b", b"x->y", b"\xe2\x80\xae evil",
    b"core::ptr::drop_in_place$LT$alloc..vec..Vec$LT$u8$GT$$GT$::h0123456789abcdef", b"(inlined)", b"",
    b"sym (with paren", b"f(int (*)(char))", b"\"quoted\"", b"'q'", b"\x00nul", b"__schedule+0x618",
    b"operator<<(std::ostream&)", b"~T()", b"LazyCompile:~foo /srv/app.js:12",
])  # fmt: skip
DSOS = st.sampled_from([b"/usr/lib/libc.so.6", b"[kernel.kallsyms]", b"[unknown]", b"/tmp/perf-1.map", b"inlined",
                        b"/lib/modules/6.1/build/vmlinux", b"[nf_conntrack]", b"/t/jitted-1-2.so", b"//anon",
                        b"/a (deleted)", b"", b"a (b) c", b"[vdso]"])  # fmt: skip
HEX = st.integers(0, 2**64 - 1).map(lambda n: f"{n:x}".encode())
NUMBER = st.integers(0, 10**12).map(lambda n: str(n).encode())
TIME = st.tuples(st.integers(0, 10**7), st.integers(0, 999999)).map(lambda t: f"{t[0]}.{t[1]:06d}".encode())
SPACE = st.sampled_from([b" ", b"  ", b"\t", b"   ", b" \t "])


@st.composite
def perf_header(draw: st.DrawFn) -> bytes:
    comm, pid = draw(COMMS), draw(NUMBER)
    ids = pid + (b"/" + draw(NUMBER) if draw(st.booleans()) else b"")
    cpu = b" [" + draw(st.integers(0, 999)).__str__().encode().zfill(3) + b"]" if draw(st.booleans()) else b""
    period = draw(st.sampled_from([b"", b" " + draw(NUMBER)]))
    tail = draw(st.sampled_from([b"", b" ", b"  " + draw(frame_line).strip()]))
    return comm + draw(SPACE) + ids + cpu + b" " + draw(TIME) + b":" + period + b" " + draw(EVENTS) + b":" + tail


@st.composite
def frame_text(draw: st.DrawFn) -> bytes:
    return draw(HEX) + b" " + draw(SYMBOLS) + b" (" + draw(DSOS) + b")"


frame_line = st.builds(lambda pad, text: pad + text, st.sampled_from([b"\t    ", b"\t", b"    ", b" "]), frame_text())
DAMAGED = st.sampled_from([b"", b"\r", b"\n", b"#", b" ", b"\t", b"(", b")", b":", b"\xff", b";", b"0x"])


@st.composite
def damaged(draw: st.DrawFn, lines: st.SearchStrategy[bytes]) -> bytes:
    """A list of lines, some of them cut, doubled or with a byte put in; joined with newlines."""
    out = []
    for line in draw(st.lists(lines, max_size=30)):
        how = draw(st.integers(0, 9))
        if how == 0 and line:
            line = line[: draw(st.integers(0, len(line)))]
        elif how == 1:
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(DAMAGED) + line[at:]
        elif how == 2:
            line = line + line
        out.append(line)
    ending = draw(st.sampled_from([b"\n", b"", b"\n\n", b"\r\n"]))
    return draw(st.sampled_from([b"\n", b"\r\n"])).join(out) + ending


# What perf prints beside headers and frames (collapse/script.py): records that are no samples, source
# lines, instructions and source code, frames without a DSO, a task that exited.
OTHER_LINES = st.sampled_from([
    b"prog 12440 10638.687535: PERF_RECORD_COMM exec: prog:12440/12440", b"PERF_RECORD_FINISHED_ROUND",
    b"prog 12440 10638.687582: PERF_RECORD_MMAP2 12440/12440: [0x55(0x1000) @ 0x1000]: r-xp /tmp/prog",
    b"12440 PERF_RECORD_FORK(12440:12442):(12440:12440)", b"  prog.c:6", b"  [kernel.kallsyms][ffffffff8135e61a]",
    b"  libc.so.6[891f5]", b"  :0", b" ilen: 3 insn: c1 e8 0e", b" ilen: 0", b"|7        s += step(i);",
    b"\t           162bd init_cpu_features.constprop.0", b"\t               0 [unknown]", b"\t    11aa",
    b":-1    -1 [001] 10639.000001:     250000 cpu-clock: ", b"prog 12440     250000 ", b"prog 12440 ",
])  # fmt: skip
PERF_LINES = st.one_of(
    perf_header(), frame_line, st.just(b""), st.sampled_from([b"# ========", b"   ", b"junk"]), OTHER_LINES
)
perf_script = damaged(PERF_LINES)

# -- sched_switch text ----------------------------------------------------------------------------
TIDS = st.sampled_from([b"0", b"1", b"10", b"11", b"12", b"-1", b"99999999999999999999"])
STATES = st.sampled_from([b"S", b"D", b"R", b"R+", b"X", b"Z", b"I", b"", b"S|D", b";"])


@st.composite
def sched_line(draw: st.DrawFn) -> bytes:
    comm, tid, time = draw(COMMS), draw(TIDS), draw(TIME)
    head = comm + draw(SPACE) + tid + b" " + draw(st.sampled_from([b"", b"[001] "])) + time + b": "
    kind = draw(st.integers(0, 7))
    if kind <= 2:
        body = (b"sched:sched_switch: prev_comm=" + draw(COMMS) + b" prev_pid=" + draw(TIDS) + b" prev_prio=120"
                b" prev_state=" + draw(STATES) + b" ==> next_comm=" + draw(COMMS) + b" next_pid=" + draw(TIDS)
                + b" next_prio=120" + draw(st.sampled_from([b"", b" 7f00 f (/l.so)", b" junk"])))  # fmt: skip
    elif kind == 3:
        body = (
            b"PERF_RECORD_SWITCH"
            + draw(st.sampled_from([b"", b"_CPU_WIDE"]))
            + b" "
            + draw(st.sampled_from([b"IN", b"OUT", b"OUT preempt"]))
        )
    elif kind == 4:
        body = (
            draw(st.sampled_from([b"PERF_RECORD_FORK", b"PERF_RECORD_EXIT"]))
            + b"("
            + draw(TIDS)
            + b":"
            + draw(TIDS)
            + b"):("
            + draw(TIDS)
            + b":"
            + draw(TIDS)
            + b")"
        )
    elif kind == 5:
        body = b"PERF_RECORD_LOST lost " + draw(NUMBER)
    elif kind == 6:
        body = b"PERF_RECORD_COMM: " + draw(COMMS) + b":" + draw(TIDS) + b"/" + draw(TIDS)
    else:
        body = draw(NUMBER) + b" cpu-clock:"
    return head + body


SCHED_LINES = st.one_of(sched_line(), sched_line(), frame_line, st.just(b""))
sched_script = damaged(SCHED_LINES)

# -- folded text ----------------------------------------------------------------------------------
FOLDED_FRAMES = st.sampled_from(["main", "a", "b", "[unknown]", "x_[k]", "--", "-", "std::f<int>", "a b", "",
                                 "\u202e", "\x85", "\u2028", "\x1c", "é", "#", "all", "\x00"])  # fmt: skip
COUNTS = st.sampled_from([b"1", b"0", b"3.5", b"1e3", b"1e308", b"1e309", b"nan", b"inf", b"-1", b"007", b"1_000",
                          b"\xd9\xa3", b"0x10", b"  2", b"12345678901234567890", b"4.9e-324"])  # fmt: skip


@st.composite
def folded_line(draw: st.DrawFn) -> bytes:
    frames = draw(st.lists(FOLDED_FRAMES, min_size=1, max_size=6))
    return ";".join(frames).encode("utf-8") + draw(st.sampled_from([b" ", b"  ", b"\t"])) + draw(COUNTS)


folded = damaged(st.one_of(folded_line(), folded_line(), st.sampled_from([b"# comment", b"", b"x"])))

# -- palette files --------------------------------------------------------------------------------
COLOURS = st.sampled_from([b"rgb(1,2,3)", b"rgb(255,255,255)", b"rgb(999,0,0)", b"#AbCdEf", b"#abc", b"red",
                           b"rgb( 1,2,3)"])  # fmt: skip


@st.composite
def palette_line(draw: st.DrawFn) -> bytes:
    return draw(FOLDED_FRAMES).encode() + draw(st.sampled_from([b"->", b"-> ", b"-", b"->->"])) + draw(COLOURS)


RGB_VALUE = st.integers(0, 255).map(lambda n: str(n).encode())
good_palette_line = st.builds(
    lambda name, r, g, b: name.encode() + b"->rgb(" + r + b"," + g + b"," + b + b")", FOLDED_FRAMES, RGB_VALUE,
    RGB_VALUE, RGB_VALUE,
)
palette = st.one_of(damaged(palette_line()), st.lists(good_palette_line, max_size=12).map(lambda ls: b"\n".join(ls)))

# -- --highlight specs and --window spans ---------------------------------------------------------
REGEX_PIECES = st.sampled_from(["dnnl", "std::vector", "(?:gemm|gemv)", "^jit_", "(?i)x", "=", ":", "::", "(",
                                ")", "[", "]", "\\", "a{4294967296}", "a{2,1}", "(?P<n>x)", "=aqua", "=#ff00ff",
                                "=#abc", ":label", "?", "*", "(?", "\\N{DASH}", "$", "."])  # fmt: skip
highlight = st.lists(REGEX_PIECES, max_size=8).map(lambda parts: "".join(parts).encode())
WINDOW_PIECES = st.sampled_from(["1", "2.5", ",", " ", "-1", "inf", "nan", "1e400", "1e-9", "", "0x1", "_", "1_0",
                                 "\u0663", "+", "9" * 30, "-0", "e"])  # fmt: skip
window = st.one_of(
    st.lists(WINDOW_PIECES, max_size=6).map(lambda parts: "".join(parts).encode()),
    st.lists(st.sampled_from(["fp", "lbr", "dwarf", ",", "8", "16384", "65528", "65536", "9" * 5000, " "]),
             max_size=4).map(lambda parts: "".join(parts).encode()),
)  # fmt: skip


def with_options(text: st.SearchStrategy[bytes], option_bytes: int = 8) -> st.SearchStrategy[bytes]:
    return st.builds(lambda head, body: head + body, st.binary(min_size=option_bytes, max_size=option_bytes), text)


def highlight_input(head: bytes, specs: list[bytes], name: bytes) -> bytes:
    """preset and palette bytes, then the specs and a frame name joined by NUL: as highlight_spec reads them."""
    return head + b"\0".join([*specs, name])


ADDRESS_PIECES = st.sampled_from(["tcp://", "tls://", "ucx://", "local", ":", "8786", "0", "65536", "127.0.0.1", "[",
                                   "]", "::1", "host", " ", "/", "@", "\u00e9", "9" * 30])  # fmt: skip
scheduler_address = st.lists(ADDRESS_PIECES, max_size=6).map(lambda parts: "".join(parts).encode())
MSGPACK_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=16), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def dask_greeting(draw: st.DrawFn) -> bytes:
    """A message framed as a Dask scheduler frames its first one (sizes may lie), msgpack inside."""
    import msgpack

    handshake = st.fixed_dictionaries({"compression": st.none(), "pickle-protocol": st.integers(0, 5)})
    value = draw(MSGPACK_VALUES | handshake)
    frames = [msgpack.packb(value), *draw(st.lists(st.binary(max_size=8), max_size=2))]
    body = struct.pack(f"<Q{len(frames)}Q", len(frames), *map(len, frames)) + b"".join(frames)
    size = len(body) + draw(st.sampled_from([0, 0, 0, -1, 1, 2**40]))
    return draw(st.sampled_from([b"", b"SSH-2.0-OpenSSH_9.2\r\n"])) + struct.pack("<Q", max(size, 0)) + body


# Capture-facts files: ours with hostile fields, and any JSON at all.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
HOSTILE_PATTERNS = st.sampled_from(
    ["(a+)+$", "(a|aa)*$", r"\w*\w*x", ".*a.*b", r"(a)\1", "dnnl=aqua:oneDNN", r"^jit_\w*(gemm|kern)", "(", "a" * 600]
)
SIDECAR_FIELDS = st.fixed_dictionaries(
    {"flamegraph-perf": st.just("capture facts of a folded file"), "version": st.sampled_from([1, 1, 1, 2, "1"])},
    optional={
        "unit": st.sampled_from(["samples", "microseconds"]) | JSON_VALUES,
        "event": JSON_VALUES, "window_us": JSON_VALUES, "title": JSON_VALUES, "subtitle": JSON_VALUES,
        "preset": st.sampled_from(["onednn", "mxnet-ops", "nope"]) | JSON_VALUES,
        "highlights": st.lists(HOSTILE_PATTERNS | st.text(max_size=12), max_size=4) | JSON_VALUES,
        "metadata": st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4) | JSON_VALUES,
    },
)  # fmt: skip


def _json_bytes(value: object) -> bytes:
    import json

    return json.dumps(value).encode()


sidecar = st.one_of(
    SIDECAR_FIELDS.map(_json_bytes),
    JSON_VALUES.map(_json_bytes),
    st.integers(1, 5000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 5000).map(lambda depth: b'{"a":' * depth + b"1" + b"}" * depth),
    st.binary(max_size=200),
)

INPUTS: dict[str, st.SearchStrategy[bytes]] = {
    "fold_text": with_options(perf_script, 4),
    "fold_file": with_options(perf_script, 4),
    "compat_reference": with_options(perf_script, 2),
    "perf_roundtrip": st.binary(min_size=20, max_size=400),
    "perf_grammar": with_options(perf_script, 1),
    "offcpu_text": with_options(sched_script, 12),
    "folded_text": with_options(folded, 5),
    "palette_file": st.builds(lambda p: b"\x00" + p, palette),
    "highlight_spec": st.builds(
        highlight_input,
        st.binary(min_size=2, max_size=2),
        st.lists(highlight, min_size=1, max_size=3),
        st.binary(max_size=8),
    ),
    "window_spec": window,
    "command_line": st.one_of(with_options(perf_script, 13), with_options(folded, 13), with_options(sched_script, 13)),
    "render_options": st.binary(max_size=120),
    "scheduler_address": scheduler_address,
    "scheduler_greeting": dask_greeting(),
    "sidecar_file": sidecar,
    "convert_input": st.one_of(with_options(perf_script, 2), with_options(folded, 2), with_options(sched_script, 2)),
}
