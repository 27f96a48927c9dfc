"""Properties of the folder: random profiles round-trip through perf script text; garbage never raises."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from helpers.fold_paths import fold_collapser, small_chunks
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flamegraph import Diagnostics, FoldOptions, PerfCollapser, fold_perf
from flamegraph.folding.frames import FrameNames
from flamegraph.folding.perf_blocks import fold_blocks
from flamegraph.io.diagnostics import MAX_SHOWN_PER_KIND
from flamegraph.io.folded import decode, iter_folded_lines, read_folded
from flamegraph.model import FoldedProfile

# Names as perf prints them: C++-ish text with spaces, templates and parens, but no ';' (the separator).
NAME_ALPHABET = st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters=";()[]'\"")
names = st.text(NAME_ALPHABET, min_size=1, max_size=12).filter(lambda s: not s.startswith("L") and "->" not in s)
comms = st.text(st.characters(min_codepoint=0x61, max_codepoint=0x7A), min_size=1, max_size=8)
stacks = st.tuples(comms, st.lists(names, min_size=0, max_size=6).map(tuple))
profiles = st.dictionaries(stacks, st.integers(min_value=1, max_value=10**6), min_size=1, max_size=12)


def as_perf_script(profile: dict[tuple[str, list[str]], int], blank_after_last: bool) -> bytes:
    """Write each stack as one perf script sample, leaf first, weighted by its period."""
    records = []
    for n, ((comm, frames), period) in enumerate(profile.items()):
        lines = [f"{comm} {1000 + n}/{1000 + n} [000] {n}.000001: {period} cpu-clock: "]
        for depth, frame in enumerate(reversed(frames)):
            lines.append(f"\t{0x400000 + depth:x} {frame}+0x1{depth:x} (/usr/lib/lib{depth}.so)")
        records.append("\n".join(lines) + "\n")
    text = "\n".join(records) + ("\n" if blank_after_last else "")
    return text.encode()


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(profile=st.dictionaries(stacks, st.integers(1, 10**6), min_size=1, max_size=12),
       blank=st.booleans())
def test_random_profile_written_as_perf_script_folds_back(profile: dict, blank: bool) -> None:  # type: ignore[type-arg]
    collapser = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
    collapser.feed(as_perf_script(profile, blank).splitlines(keepends=True), "gen")  # type: ignore[arg-type]
    expected: Counter[str] = Counter()
    for (comm, frames), period in profile.items():
        expected[";".join([comm, *frames])] += period
    assert collapser.profile().counts == dict(expected)
    assert collapser.diagnostics.skipped == 0


# C++ names as perf prints them (no parameter list), with the ' (' of function types inside templates,
# lambdas, operator() and anonymous namespaces: `perf report` shows them whole, so must every layout.
CPP_PIECES = st.sampled_from([
    "std::_Function_handler<double (double), main::{lambda(double)#1}>", "::", "_M_invoke", "{lambda()#4}",
    "operator()", "f<void (std::shared_ptr<X>)>", "(anonymous namespace)", "f", "a)", " ", "x<int (*)()>",
    "ns::Box<double, 1024>", "h [clone .cold]", "k<(x (y)) (z)>",
])  # fmt: skip
# Joined by '::' and ending in a word: no top-level parameter list for tidy to cut (a rule of its own)
cpp_names = st.lists(CPP_PIECES, min_size=1, max_size=5).map(lambda pieces: "::".join(["w", *pieces, "g"]))
cpp_stacks = st.tuples(comms, st.lists(cpp_names, min_size=1, max_size=5).map(tuple))
LAYOUTS = {  # perf script -F ...: the header, and whether frames end with the DSO
    "plain": ("{comm} {tid} [000] {n}.000001: {period} cpu-clock: ", True),
    "comm,tid,time,period,event,ip,sym": ("{comm} {tid} {n}.000001: {period} cpu-clock: ", False),
    "comm,tid,period,ip,sym": ("{comm} {tid} {period} ", False),
    "comm,tid,ip,sym,dso": ("{comm} {tid} ", True),
}


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(cpp_stacks, st.integers(1, 10**6), min_size=1, max_size=8), st.sampled_from(sorted(LAYOUTS)),
       st.integers(1, 64))  # fmt: skip
def test_cpp_names_fold_whole_in_every_layout(profile: dict, layout: str, block: int) -> None:  # type: ignore[type-arg]
    """A name holding ' (' folds whole whether perf printed the DSO after it or not (-F ip,sym), in the
    fast path and the line by line one: the DSO is the balanced group ending the line, never a ' (' inside."""
    header, dso = LAYOUTS[layout]
    records = []
    for n, ((comm, frames), period) in enumerate(profile.items()):
        lines = [header.format(comm=comm, tid=1000 + n, n=n, period=period)]
        lines += [f"\t{0x400000 + d:x} {frame}+0x{d:x}" + (" (/usr/lib/x (deleted))" if dso else "")
                  for d, frame in enumerate(reversed(frames))]  # fmt: skip
        records.append("\n".join(lines) + "\n")
    data = "\n".join(records).encode()
    weighted = "period" in layout or layout == "plain"
    expected: Counter[str] = Counter()
    for (comm, frames), period in profile.items():
        expected[";".join([comm, *frames])] += period if weighted else 1
    by_lines = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
    by_lines.feed(data.splitlines(keepends=True), "x")
    by_blocks = PerfCollapser(FoldOptions(), Diagnostics(echo=False))
    fold_blocks(by_blocks, [data[i : i + block] for i in range(0, len(data), block)], "x")
    for collapser in (by_lines, by_blocks):
        assert collapser.profile().counts == dict(expected)
        assert collapser.diagnostics.skipped == 0


@settings(max_examples=300)
@given(st.binary(max_size=400), st.booleans())
def test_arbitrary_bytes_never_raise_only_add_diagnostics(data: bytes, compat: bool) -> None:
    diagnostics = Diagnostics(echo=False)
    collapser = PerfCollapser(FoldOptions(compat=compat), diagnostics)
    lines = io.BytesIO(data).readlines()  # as a file reads them: split after b"\n" only
    collapser.feed(lines, "fuzz")
    # Each problem names a real line of the input, holds that line's text, and is counted once.
    for problem in diagnostics.problems:
        assert problem.path == "fuzz" and 1 <= problem.line <= len(lines), problem
        assert problem.text.strip() == decode(lines[problem.line - 1]).strip(), problem
    assert sum(diagnostics.shown.values()) == len(diagnostics.problems) <= diagnostics.skipped
    assert all(n <= MAX_SHOWN_PER_KIND for n in diagnostics.shown.values())
    assert all(weight > 0 for counts in collapser.by_event.values() for weight in counts.values())


LINE_PIECES = st.sampled_from(
    [
        "python 42 [000] 1.000001: 1001 cpu-clock: ",
        "java 1/2 cycles: ",
        "\t    7f00 foo+0x1 (/lib/x.so)",
        "\t    7f01 [unknown] ([unknown])",
        "\tgarbage",
        "",
        "# comment",
        "nonsense line",
        "\t    11 std::f<void (int)>::g(int) (/lib/y.so)",
        "   p 9 2.0: 5 cpu-clock:  7f02 bar (/lib/z.so)",
        "V8 Worker 12 34 [000] 1.5: 5 cpu-clock: ",
        "a 7/8 3.25: cpu-clock: ",
        "python 42 [000] 1.000002: 0 page-faults: ",
        "\t    7f03 java/lang/Foo+0x1 (/tmp/perf-1.map)",
    ]
)


@settings(max_examples=200)
@given(st.lists(LINE_PIECES, max_size=40), st.booleans())
def test_structured_garbage_folds_without_raising(pieces: list[str], compat: bool) -> None:
    diagnostics = Diagnostics(echo=False)
    collapser = PerfCollapser(FoldOptions(compat=compat), diagnostics)
    collapser.feed(("\n".join(pieces) + "\n").encode().splitlines(keepends=True), "mix")
    profile = collapser.profile()
    assert all(weight > 0 for weight in profile.counts.values())


@settings(max_examples=100)
@given(profiles)
def test_folded_text_round_trips(profile: dict[tuple[str, list[str]], int]) -> None:
    original = FoldedProfile()
    for (comm, frames), count in profile.items():
        original.add(";".join([comm, *frames]), count)
    text = b"".join(iter_folded_lines(original))
    again = read_folded(text.splitlines(keepends=True), "rt", Diagnostics(echo=False))
    assert again.counts == original.counts
    assert b"".join(iter_folded_lines(again)) == text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profile=st.dictionaries(stacks, st.integers(1, 10**6), min_size=1, max_size=40))
def test_jobs_output_equals_single_process(profile: dict, tmp_path_factory) -> None:  # type: ignore[type-arg,no-untyped-def]
    path = Path(tmp_path_factory.mktemp("jobs")) / "in.txt"
    path.write_bytes(as_perf_script(profile, True) * 3)  # type: ignore[arg-type]
    with small_chunks():  # force real splitting on these small inputs
        single = fold_perf([str(path)], FoldOptions(), Diagnostics(echo=False), jobs=1)
        multi = fold_perf([str(path)], FoldOptions(), Diagnostics(echo=False), jobs=3)
    assert multi.profile.counts == single.profile.counts


@settings(max_examples=300)
@given(st.lists(LINE_PIECES, max_size=40), st.booleans(), st.integers(1, 64))
def test_block_fast_path_equals_line_state_machine(pieces: list[str], compat: bool, block: int) -> None:
    """Same counts, same problems at the same line numbers, whatever the block boundaries."""
    data = ("\n".join(pieces) + "\n").encode()
    by_lines = PerfCollapser(FoldOptions(compat=compat), Diagnostics(echo=False))
    by_lines.feed(data.splitlines(keepends=True), "x")
    by_blocks = PerfCollapser(FoldOptions(compat=compat), Diagnostics(echo=False))
    fold_blocks(by_blocks, [data[i : i + block] for i in range(0, len(data), block)], "x")
    assert by_blocks.by_event == by_lines.by_event
    assert by_blocks.diagnostics.problems == by_lines.diagnostics.problems
    assert by_blocks.diagnostics.records == by_lines.diagnostics.records


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(LINE_PIECES, max_size=60), compat=st.booleans(), jobs=st.integers(2, 4))
def test_jobs_give_the_same_stacks_and_diagnostics(pieces: list[str], compat: bool, jobs: int, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Whatever the input, N processes fold what one does and report the same problems, at the same
    lines, with the same record counts and summary."""
    path = Path(tmp_path_factory.mktemp("jobs")) / "mix.txt"
    path.write_bytes(("\n".join(pieces) + "\n").encode())
    one = fold_collapser(path, FoldOptions(compat=compat), 1)
    many = fold_collapser(path, FoldOptions(compat=compat), jobs)
    assert many.by_event == one.by_event and many.event_filter == one.event_filter
    assert [list(stacks) for stacks in many.by_event.values()] == [list(stacks) for stacks in one.by_event.values()]
    assert many.skipped_by_event == one.skipped_by_event
    assert many.diagnostics.problems == one.diagnostics.problems
    assert many.diagnostics.summary() == one.diagnostics.summary()
    assert many.diagnostics.records == one.diagnostics.records


TOKENS = st.text(st.sampled_from("ab1:./[]() -\t"), min_size=1, max_size=8)
HEADERS = st.builds(
    lambda comm, ids, stamp, period, event: f"{comm} {ids} {stamp}: {period}{event}: ",
    st.sampled_from(["python", "java", "p", "a b", "x:y", "#c"]),
    st.sampled_from(["42", "1/2", "7/0", "x", "3 [001]"]),
    TOKENS,
    st.sampled_from(["", "1001 ", "0 ", "5 "]),
    st.sampled_from(["cpu-clock", "cycles", "a:b", "ev :x"]),
)


@settings(max_examples=300)
@given(st.lists(st.one_of(HEADERS, LINE_PIECES), max_size=30), st.booleans())
def test_header_cache_never_changes_a_result(pieces: list[str], compat: bool) -> None:
    """Headers whose timestamp slot holds anything at all: the fast path, which caches header facts
    under the header without that slot, folds what the line-by-line state machine folds."""
    data = ("\n".join(pieces) + "\n").encode()
    by_lines = PerfCollapser(FoldOptions(compat=compat), Diagnostics(echo=False))
    by_lines.feed(data.splitlines(keepends=True), "x")
    by_blocks = PerfCollapser(FoldOptions(compat=compat), Diagnostics(echo=False))
    fold_blocks(by_blocks, [data], "x")
    assert by_blocks.by_event == by_lines.by_event
    assert by_blocks.skipped_by_event == by_lines.skipped_by_event
    assert by_blocks.diagnostics.problems == by_lines.diagnostics.problems


@settings(max_examples=200)
@given(st.lists(LINE_PIECES, max_size=40), st.booleans(), st.integers(1, 64), st.booleans())
def test_long_stretches_without_a_blank_line_fold_the_same(
    pieces: list[str], compat: bool, block: int, crlf: bool
) -> None:
    """Input without blank lines for long (CRLF text, garbage) is handed to the state machine as it
    comes rather than held in memory: the result is the same as folding it line by line."""
    import flamegraph.folding.perf_blocks as perf_blocks

    data = (("\r\n" if crlf else "\n").join(pieces) + "\n").encode()
    by_lines = PerfCollapser(FoldOptions(compat=compat), Diagnostics(echo=False))
    by_lines.feed(_lines(data), "x")
    by_blocks = PerfCollapser(FoldOptions(compat=compat), Diagnostics(echo=False))
    old = perf_blocks.MAX_CARRY
    perf_blocks.MAX_CARRY = 32
    try:
        fold_blocks(by_blocks, [data[i : i + block] for i in range(0, len(data), block)], "x")
    finally:
        perf_blocks.MAX_CARRY = old
    assert by_blocks.by_event == by_lines.by_event
    assert by_blocks.diagnostics.problems == by_lines.diagnostics.problems
    assert by_blocks.diagnostics.records == by_lines.diagnostics.records


def _lines(data: bytes) -> list[bytes]:
    """As a file iterates bytes: split after each b'\\n' only."""
    return io.BytesIO(data).readlines()


# Frame lines as perf prints them and worse: any address (one digit, upper case, none), blanks and tabs,
# rests that begin with '(' or a blank, offsets, several ' (' groups, [unknown], kernel and JIT DSOs.
FRAME_HEADS = st.sampled_from([b"\t", b"\t    ", b"\t \t", b"  ", b"\t\x0b", b""])
FRAME_ADDRESSES = st.sampled_from([b"7", b"7f", b"7f0a1b", b"ffffffff8103d0ca", b"7F0A", b"", b"zz", b"7f_1"])
FRAME_RESTS = st.lists(
    st.sampled_from([
        b"main", b"leaf+0x31", b"leaf+0x3g", b"+0x5", b"[unknown]", b"(anonymous namespace)::f", b"(x)", b" ",
        b"std::f<void (int)>::g(int)", b"a->b", b"py::main:/x/t.py", b" (/lib/libc.so.6)", b" ([kernel.kallsyms])",
        b" ([unknown])", b" (/tmp/perf-1.map)", b" (inlined)", b"(", b")", b" (", b"\t", b"\r", b"Lorg/Foo;.x",
        b"std::h<double (double), F>::_M_invoke", b"{lambda()#1}::operator()", b"f<void (int)>::operator()",
    ]),
    max_size=5,
).map(b"".join)  # fmt: skip


@settings(max_examples=400)
@given(st.lists(st.tuples(FRAME_HEADS, FRAME_ADDRESSES, FRAME_RESTS), max_size=30), st.booleans(), st.booleans())
@example([(b"\t", b"7", b" (/lib/libc.so.6)"), (b"\t", b"7", b"\t (/lib/libc.so.6)")], False, False)  # blank symbols
def test_naming_frame_lines_in_a_batch_equals_one_by_one(
    parts: list[tuple[bytes, bytes, bytes]], java: bool, drop_kernel: bool
) -> None:
    """FrameNames.name_all (addresses cut off a whole batch, names shared by what is left) names every
    line as FrameNames.name does alone, in any order and with any lines named before."""
    lines = list(dict.fromkeys(head + address + b" " + rest for head, address, rest in parts))
    one = FrameNames(FoldOptions(), drop_kernel)
    expected = {line: one.name(line, java) for line in lines}
    batch = FrameNames(FoldOptions(), drop_kernel)
    half = len(lines) // 2
    batch.name_all(lines[half:], java)  # a batch first, so the second one finds rests named before
    batch.name_all(lines[:half], java)
    table = batch.table(java)
    got = {line: table[line] if line in table else b"" if batch.name(line, java) == b"" else None for line in lines}
    assert got == expected
