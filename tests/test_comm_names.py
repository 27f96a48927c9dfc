"""Thread and program names as users give them: a blank before a number ("GC Thread 2", "job 12 3") is part
of the name, not its ids (newcomer10 a-F15: roots `GC_Thread-?/2`); a ';' in a comm or a script's file name
stays inside one frame (a-F16, b-12: `main;x y` was two frames). --compat keeps the reference's reading."""

from __future__ import annotations

from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.folding.perf_blocks import fold_blocks
from flamegraph.folding.tidy import python_frame
from flamegraph.io.diagnostics import Diagnostics

TEXT = b"""GC Thread 2 23531/23533 [000] 12.345678:     250000 cpu-clock:
\t    55d0 spin+0x10 (/tmp/prog)
\t    7f00 start_thread+0x20 (/usr/lib/libc.so.6)

job 12 3 23531/23534 [001] 12.345999:     250000 cpu-clock:
\t    55d0 spin+0x10 (/tmp/prog)

main;x y 23531/23531 12.346000:     250000 cpu-clock:
\t    55d0 spin+0x10 (/tmp/prog)

w  2 [x] 23531/23535 [001] 12.346100:     250000 cpu-clock:
\t    55d0 spin+0x10 (/tmp/prog)

"""


def fold(text: bytes, **options: bool) -> dict[str, int]:
    collapser = PerfCollapser(FoldOptions(**options), Diagnostics())  # type: ignore[arg-type]
    fold_blocks(collapser, [text], "t.txt")
    return {stack: int(count) for stack, count in collapser.profile().counts.items()}


def test_a_blank_and_a_number_in_a_comm_stay_in_its_name() -> None:
    roots = {stack.split(";")[0] for stack in fold(TEXT, tid=True)}
    assert roots == {"GC_Thread_2-23531/23533", "job_12_3-23531/23534", "main:x_y-23531/23531",
                     "w__2_[x]-23531/23535"}  # fmt: skip


def test_a_semicolon_in_a_comm_does_not_split_the_root() -> None:
    assert "main:x_y;spin" in fold(TEXT)


def test_compat_reads_comms_as_the_reference_does() -> None:
    assert "main;x_y;spin" in fold(TEXT, compat=True)  # stackcollapse-perf.pl keeps the ';'


def test_a_semicolon_in_a_python_files_name_stays_in_one_frame() -> None:
    assert python_frame(b"py::main:/tmp/semi/se;mi.py") == b"main (se:mi.py)"
    assert python_frame(b"py::a;b:/tmp/x.py") == b"a:b (x.py)"


def test_ids_in_a_tracepoints_payload_are_not_the_headers() -> None:
    """The look ahead stops at the time field: `prev_comm=a 7 1.5:` after it is payload, not later ids."""
    from flamegraph.folding.grammar import read_header

    header = read_header(b"java 1234/1240 [001] 1.000: 1 sched:sched_switch: prev_comm=a 7 1.5: prev_pid=9")
    assert header is not None and (header.comm, header.pid, header.tid) == (b"java", b"1234", b"1240")


def test_a_hostile_header_line_is_read_in_linear_time() -> None:
    """Many blank-and-number pairs before the time: the look ahead was unbounded, 141 s on 256 KB."""
    import time

    from flamegraph.folding.grammar import HEADER_OURS

    line = b"x " + b"a 1 " * 65536 + b"2 3.5: 1 cycles: "
    started = time.perf_counter()
    HEADER_OURS.match(line)
    assert time.perf_counter() - started < 1.0
