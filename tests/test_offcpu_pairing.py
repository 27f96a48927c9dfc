"""The off-CPU folder on crafted `perf script` text: pairing, window clipping, states, new threads, errors."""

from __future__ import annotations

import pytest

from flamegraph.folding.perf_sched import NEW_THREAD, SINCE_START, OffCpuOptions, SchedCollapser, Wait, parse_time_ns
from flamegraph.folding.sched_totals import OffCpuFolder, format_ns
from flamegraph.io.diagnostics import Diagnostics, StrictFailure
from flamegraph.model import FoldedProfile
from flamegraph.window import Window

NANOSLEEP = [
    "\tffffffff821f8298 __schedule+0x618 ([kernel.kallsyms])",
    "\tffffffff821ffb7e do_nanosleep+0x5e ([kernel.kallsyms])",
    "\tffffffff821ecc51 do_syscall_64+0x71 ([kernel.kallsyms])",
    "\t           cf503 clock_nanosleep@GLIBC_2.2.5+0x23 (/usr/lib/x86_64-linux-gnu/libc.so.6)",
    "\t            1080 main (/usr/bin/app)",
]
NANOSLEEP_STACK = "main;clock_nanosleep@GLIBC_2.2.5;do_syscall_64;do_nanosleep;__schedule"


def switch(comm: str, tid: int, time: str, state: str, next_comm: str, next_tid: int, frames: list[str]) -> str:
    head = (
        f"{comm} {tid:5d} {time}: sched:sched_switch: prev_comm={comm} prev_pid={tid} prev_prio=120 "
        f"prev_state={state} ==> next_comm={next_comm} next_pid={next_tid} next_prio=120"
    )
    return "\n".join([head, *frames, ""]) + "\n"


def record(comm: str, tid: int, time: str, what: str) -> str:
    return f"{comm} {tid:5d} {time}: {what}\n"


def waits(text: str, options: OffCpuOptions | None = None, strict: bool = False) -> tuple[list[Wait], Diagnostics]:
    diagnostics = Diagnostics(strict=strict, echo=False)
    collapser = SchedCollapser(options or OffCpuOptions(), diagnostics)
    return list(collapser.iter_waits(text.encode().splitlines(keepends=True), "t.txt")), diagnostics


def fold(text: str, options: OffCpuOptions | None = None) -> FoldedProfile:
    options = options or OffCpuOptions()
    diagnostics = Diagnostics(echo=False)
    collapser = SchedCollapser(options, diagnostics)
    folder = OffCpuFolder(options)
    for wait in collapser.iter_waits(text.encode().splitlines(keepends=True), "t.txt"):
        folder.add(wait)
    return folder.profile(folder.totals(collapser.window_ns, collapser.lost))


def test_switch_events_pair_out_with_in() -> None:
    text = (
        record("app", 10, "100.000000", "PERF_RECORD_SWITCH IN")
        + switch("app", 10, "100.001000", "S", "swapper/0", 0, NANOSLEEP)
        + record("app", 10, "100.001005", "PERF_RECORD_SWITCH OUT")
        + record("app", 10, "100.051250", "PERF_RECORD_SWITCH IN")
    )
    profile = fold(text)
    assert profile.unit == "microseconds"
    assert profile.event == "sched:sched_switch"
    assert profile.counts == {f"app-10;{NANOSLEEP_STACK};[S]": 50250}


def test_system_wide_pairs_on_next_pid_and_never_twice() -> None:
    """-a with --switch-events: the next_pid switch-in and the SWITCH_CPU_WIDE IN are one event."""
    text = (
        switch("app", 10, "5.000000", "D", "db", 20, NANOSLEEP[:2])
        + switch("db", 20, "5.000300", "S", "app", 10, NANOSLEEP[:1])
        + record("app", 10, "5.000301", "PERF_RECORD_SWITCH_CPU_WIDE IN  prev pid/tid:    20/20")
        + switch("app", 10, "5.000400", "R+", "db", 20, NANOSLEEP[:1])
        + record("db", 20, "5.000410", "PERF_RECORD_SWITCH_CPU_WIDE IN  prev pid/tid:    10/10")
    )
    profile = fold(text)
    assert profile.counts["app-10;do_nanosleep;__schedule;[D]"] == 300
    assert profile.counts["db-20;__schedule;[S]"] == 100
    assert profile.counts["app-10;__schedule;[R]"] == 10  # still waiting at the end: clipped
    # db was first seen switching in at 5.000000 (as next_pid): its wait before that is outside the window.
    assert f"db-20;{SINCE_START.decode()};[?]" not in profile.counts
    assert profile.metadata["by state"] == "D 300 µs, S 100 µs, R 10 µs"
    assert (
        profile.metadata["clipped to the window"] == "1 wait open at the start (0 µs), 1 wait open at the end (10 µs)"
    )


def test_wait_open_at_start_is_clipped_to_the_window_start() -> None:
    text = (
        record("app", 10, "1.000000", "PERF_RECORD_SWITCH IN")
        + switch("app", 10, "1.100000", "S", "swapper/1", 0, NANOSLEEP)
        + record("worker", 11, "1.250000", "PERF_RECORD_SWITCH IN")  # off-CPU since before 1.0
        + record("app", 10, "1.300000", "PERF_RECORD_SWITCH IN")
    )
    profile = fold(text)
    assert profile.counts[f"worker-11;{SINCE_START.decode()};[?]"] == 250000
    assert profile.counts[f"app-10;{NANOSLEEP_STACK};[S]"] == 200000
    assert profile.metadata["clipped to the window"] == "2 waits open at the start (250.0 ms)"  # app's is 0 µs long
    assert profile.metadata["window"] == "300.0 ms"


def test_wait_open_at_end_is_clipped_to_the_last_timestamp() -> None:
    text = (
        switch("app", 10, "2.000000", "S", "swapper/1", 0, NANOSLEEP)
        + record("app", 10, "2.000004", "PERF_RECORD_SWITCH OUT")
        + record("other", 12, "2.400000", "PERF_RECORD_SWITCH IN")
    )
    found, _ = waits(text)
    by_thread = {w.thread: w for w in found}
    assert by_thread[b"app-10"].kind == "open at end"
    assert by_thread[b"app-10"].ns == 400_000_000
    assert by_thread[b"app-10"].stack == f"app-10;{NANOSLEEP_STACK};[S]".encode()
    assert by_thread[b"other-12"].kind == "open at start"


def test_wait_open_at_end_is_cut_where_the_recording_ended_when_that_is_known() -> None:
    """`offcpu --duration 2 -- sleep 30`: the last record is sleep's own switch-out, so the wait was cut
    to a few µs; perf was stopped 2 s in, and the wait runs until then (the window too)."""
    text = switch("sleep", 10, "2.000000", "S", "perf", 9, NANOSLEEP) + record(
        "sleep", 10, "2.000027", "PERF_RECORD_SWITCH OUT"
    )
    collapser = SchedCollapser(OffCpuOptions(), Diagnostics(echo=False))
    lines = text.encode().splitlines(keepends=True)
    [wait] = collapser.iter_waits(lines, "t.txt", recording_end=parse_time_ns(b"3", b"8"))
    assert (wait.kind, wait.ns, wait.end) == ("open at end", 1_800_000_000, 3_800_000_000)
    assert collapser.window_ns == collapser.last_window_ns == 1_800_000_000
    [before] = SchedCollapser(OffCpuOptions(), Diagnostics(echo=False)).iter_waits(lines, "t.txt")
    assert before.ns == 27_000  # unknown end: the last record, as `fold --offcpu` of a saved perf.data
    [early] = SchedCollapser(OffCpuOptions(), Diagnostics(echo=False)).iter_waits(lines, "t.txt", 1_000_000_000)
    assert early.ns == 27_000  # an end before the last record never shortens the window


def test_each_wait_counted_once_per_thread() -> None:
    """A thread's waits never overlap: the sum stays within the window."""
    text = record("app", 10, "1.000000", "PERF_RECORD_SWITCH IN")
    for i in range(1, 10):
        text += switch("app", 10, f"1.{i}00000", "S", "swapper/0", 0, NANOSLEEP)
        text += record("app", 10, f"1.{i}50000", "PERF_RECORD_SWITCH IN")
        text += switch("x", 99, f"1.{i}50001", "S", "app", 10, [])  # a late next_pid: already paired
    found, _ = waits(text)
    app = [w for w in found if w.thread == b"app-10"]
    assert sum(w.ns for w in app) == 9 * 50_000_000


@pytest.mark.parametrize(
    ("state", "frame"), [("S", "[S]"), ("D", "[D]"), ("R", "[R]"), ("R+", "[R]"), ("I", "[I]"), ("T", "[T]")]
)
def test_state_is_the_last_frame(state: str, frame: str) -> None:
    text = switch("app", 10, "1.000000", state, "b", 11, NANOSLEEP[:1]) + record(
        "app", 10, "1.000010", "PERF_RECORD_SWITCH IN"
    )
    assert fold(text).counts == {f"app-10;__schedule;{frame}": 10}


@pytest.mark.parametrize("state", ["X", "Z"])
def test_a_dead_thread_does_not_wait(state: str) -> None:
    text = switch("app", 10, "1.000000", state, "b", 11, NANOSLEEP[:1]) + record(
        "b", 11, "2.000000", "PERF_RECORD_SWITCH OUT"
    )
    found, _ = waits(text)
    assert [w for w in found if w.thread == b"app-10"] == []


def test_thread_created_during_the_recording() -> None:
    text = (
        record("app", 10, "3.000000", "PERF_RECORD_SWITCH IN")
        + record("app", 10, "3.000100", "PERF_RECORD_FORK(10:13):(10:10)")
        + switch("app", 10, "3.000200", "S", "app", 13, NANOSLEEP[:1])
        + record("app", 13, "3.000250", "PERF_RECORD_SWITCH IN")
        + switch("app", 13, "3.000300", "S", "app", 10, NANOSLEEP)
        + record("app", 10, "3.000310", "PERF_RECORD_SWITCH IN")
        + record("app", 13, "3.020300", "PERF_RECORD_SWITCH IN")
        + record("app", 13, "3.020400", "PERF_RECORD_EXIT(10:13):(10:10)")
    )
    profile = fold(text)
    # From its FORK to its first run, which the next_pid of app's switch-out shows before its SWITCH IN.
    assert profile.counts[f"app-13;{NEW_THREAD.decode()};[R]"] == 100
    assert profile.counts[f"app-13;{NANOSLEEP_STACK};[S]"] == 20000
    assert "1 new thread's first wait (100 µs)" in profile.metadata["clipped to the window"]


def test_exit_ends_a_thread_without_a_wait() -> None:
    text = (
        switch("app", 13, "3.000300", "S", "app", 10, NANOSLEEP)
        + record("app", 13, "3.000400", "PERF_RECORD_EXIT(10:13):(10:10)")
        + record("app", 10, "4.000000", "PERF_RECORD_SWITCH IN")
    )
    found, _ = waits(text)
    assert [w.thread for w in found] == [b"app-10"]


def test_second_switch_out_without_switch_in_is_reported_not_counted() -> None:
    text = (
        switch("app", 10, "1.000000", "S", "b", 11, NANOSLEEP[:1])  # lines 1-3
        + switch("app", 10, "1.500000", "D", "b", 11, NANOSLEEP[:1])  # line 4: the switch-in was lost
        + record("app", 10, "1.500100", "PERF_RECORD_SWITCH IN")
    )
    found, diagnostics = waits(text)
    assert [(w.state, w.ns) for w in found if w.thread == b"app-10"] == [(b"D", 100_000)]
    assert [(p.line, p.kind) for p in diagnostics.problems] == [(4, "unpaired-switch-out")]
    with pytest.raises(StrictFailure):
        waits(text, strict=True)


def test_malformed_records_are_reported_with_their_line() -> None:
    text = (
        "app    10     1.000000: sched:sched_switch: prev_comm=app prev_pid=ten\n"  # 1
        "\tffffffff821f8298 __schedule+0x618 ([kernel.kallsyms])\n"  # 2: belongs to the bad record
        "\n"
        "this is not perf script\n"  # 4
        + switch("app", 10, "1.100000", "S", "b", 11, ["\tnot a frame"])  # 5, 6
        + record("app", 10, "1.200000", "PERF_RECORD_SWITCH IN")
    )
    found, diagnostics = waits(text)
    kinds = [(p.line, p.kind) for p in diagnostics.problems]
    assert kinds == [(1, "bad-switch"), (4, "bad-header"), (6, "bad-frame-line")]
    assert [w.ns for w in found if w.thread == b"app-10"] == [100_000_000]


def test_an_exited_tasks_last_switch_is_read_as_any_record() -> None:
    """perf script prints a task that had exited when it read the record as `:-1 -1` (the kernel had
    released its pid; only recordings on all CPUs see it): no wait of the exiting task (prev_state X),
    but the thread it switches in ends its wait there; nothing to warn about (newcomer10 b-5: such
    records of other processes gave ~10 warnings per `offcpu --wakers` run)."""
    text = (
        switch("b", 11, "0.900000", "S", "app", 12, NANOSLEEP[:1])
        + ":-1    -1 [001]     1.000000: sched:sched_switch: prev_comm=app prev_pid=12 prev_prio=120"
        " prev_state=X ==> next_comm=b next_pid=11 next_prio=120\n"
        "\tffffffff821f8298 __schedule+0x618 ([kernel.kallsyms])\n"
        "\n"
        ":-1    -1 [001]     1.000001: PERF_RECORD_SWITCH_CPU_WIDE OUT          next pid/tid:    11/11\n"
        + switch("app", 10, "1.100000", "S", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.200000", "PERF_RECORD_SWITCH IN")
    )
    found, diagnostics = waits(text)
    assert not diagnostics.problems and not diagnostics.counts
    # app-12 runs from the first record on (a wait of 0 ns before it); exiting, it has no wait of its own
    assert [(w.thread, w.ns) for w in found if w.ns] == [(b"b-11", 100_000_000), (b"app-10", 100_000_000)]


def test_without_switch_records_a_last_switch_out_is_no_wait_open_to_the_end() -> None:
    """newcomer10 a-F18: text of a recording without --switch-events (or printed without
    --show-switch-events) has most switch-ins missing; a thread's last switch-out, its switch-in and its
    exit unseen, was drawn as a wait until the recording's end (a thread preempted once, then run to its
    end, drawn 348 ms preempted). Those are left out and said; paired waits stay."""
    text = (
        switch("app", 10, "1.000000", "S", "b", 11, NANOSLEEP[:1])
        + switch("b", 11, "1.100000", "S", "app", 10, NANOSLEEP[:1])  # app-10 back: a paired wait of 100 ms
        + switch("app", 10, "1.200000", "R+", "swapper/0", 0, NANOSLEEP[:1])  # preempted: then ran, unseen
        + switch("app", 10, "1.500000", "S", "swapper/0", 0, NANOSLEEP[:1])  # so: unpaired
        + switch("c", 12, "1.900000", "S", "swapper/0", 0, NANOSLEEP[:1])
    )
    found, diagnostics = waits(text)
    assert [(w.thread, w.ns) for w in found if w.ns] == [(b"app-10", 100_000_000)]  # no S of 400 ms, 800 ms
    assert [note for note in diagnostics.notes if "open at the end" in note] == [
        "t.txt: 1 switch-outs had no switch-in (and 3 waits open at the end, 1,200.0 ms, left out: as unknown): "
        "the text has no PERF_RECORD_SWITCH records, so most off-CPU time is missing: print it with `perf script "
        "--show-switch-events` (of a recording made with `perf record --switch-events`, as `flamegraph offcpu` "
        "makes them)"
    ]


def test_kernel_frames_dropped_or_annotated() -> None:
    text = switch("app", 10, "1.0", "S", "b", 11, NANOSLEEP) + record("app", 10, "1.5", "PERF_RECORD_SWITCH IN")
    assert list(fold(text, OffCpuOptions(keep_kernel=False)).counts) == ["app-10;main;clock_nanosleep@GLIBC_2.2.5;[S]"]
    annotated = list(fold(text, OffCpuOptions(annotate_kernel=True)).counts)[0]
    assert annotated.endswith("do_syscall_64_[k];do_nanosleep_[k];__schedule_[k];[S]")


def test_state_filter_and_min_us_are_counted_not_silent() -> None:
    text = (
        switch("app", 10, "1.000000", "S", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.000005", "PERF_RECORD_SWITCH IN")
        + switch("app", 10, "1.100000", "R", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.200000", "PERF_RECORD_SWITCH IN")
        + switch("app", 10, "1.300000", "S", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.400000", "PERF_RECORD_SWITCH IN")
    )
    profile = fold(text, OffCpuOptions(states=frozenset({"S"}), min_us=10))
    assert profile.counts == {"app-10;__schedule;[S]": 100000}
    assert profile.metadata["excluded"] == "1 waits shorter than 10 µs (5 µs), 1 waits state R (100.0 ms)"


def test_filters_that_remove_every_wait_say_so() -> None:
    """--state/--min-us that leave nothing: the filters are named with what they removed, not advice to
    record sched_switch (the records were there); a text with no waits still gets that advice."""
    from flamegraph.folding.offcpu import fold_offcpu_sources
    from flamegraph.io.diagnostics import NoSamples

    text = (
        switch("app", 10, "1.000000", "S", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.500000", "PERF_RECORD_SWITCH IN")
        + switch("app", 10, "1.600000", "R", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.600005", "PERF_RECORD_SWITCH IN")
    )

    def refusal(body: str, options: OffCpuOptions) -> str:
        with pytest.raises(NoSamples) as refused:
            fold_offcpu_sources([("p.txt", body.encode().splitlines(keepends=True))], "p.txt", options)
        return str(refused.value)

    assert refusal(text, OffCpuOptions(states=frozenset({"D"}))) == (
        "p.txt: no off-CPU time left: --state/--min-us removed all 2 waits, 500.0 ms (state R: 1 wait, 5 µs; "
        "state S: 1 wait, 500.0 ms)"
    )
    assert refusal(text, OffCpuOptions(min_us=10_000_000)).startswith(
        "p.txt: no off-CPU time left: --state/--min-us removed all 2 waits, 500.0 ms (shorter than 1e+07 µs"
    )
    assert "record with -e sched:sched_switch" in refusal(record("app", 10, "1.0", "PERF_RECORD_SWITCH IN"),
                                                           OffCpuOptions())  # fmt: skip


def test_header_totals_per_state_and_thread() -> None:
    text = ""
    for tid, state, start, end in [
        (10, "S", "1.0", "1.5"),
        (11, "D", "1.0", "1.25"),
        (12, "R", "1.1", "1.2"),
    ]:
        text += switch("t", tid, start, state, "x", 99, NANOSLEEP[:1])
        text += record("t", tid, end, "PERF_RECORD_SWITCH IN")
    meta = fold(text).metadata
    assert meta["off-CPU"] == "850.0 ms in 3 waits of 3 threads"
    assert meta["by state"] == "S 500.0 ms, D 250.0 ms, R 100.0 ms"
    assert meta["by thread"] == "t-10 500.0 ms, t-11 250.0 ms, t-12 100.0 ms"


def test_default_layout_with_cpu_right_aligned_comm_and_spaces() -> None:
    """`perf script` without -F: '[cpu]', offsets, a comm with a space, right-aligned switch records."""
    text = (
        "Web Content  4242 [001]  9.000000: sched:sched_switch: prev_comm=Web Content prev_pid=4242 "
        "prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n"
        "\tffffffff821f8298 __schedule+0x618 ([kernel.kallsyms])\n"
        "\n"
        "     Web Content  4242 [000]  9.000700: PERF_RECORD_SWITCH IN\n"
    )
    assert fold(text).counts == {"Web_Content-4242;__schedule;[S]": 700}


def test_nanosecond_timestamps_are_exact() -> None:
    assert parse_time_ns(b"12", b"000000001") == 12_000_000_001
    assert parse_time_ns(b"12", b"5") == 12_500_000_000
    text = switch("a", 1, "7.000000100", "S", "b", 2, NANOSLEEP[:1]) + record(
        "a", 1, "7.000002600", "PERF_RECORD_SWITCH IN"
    )
    assert fold(text).counts == {"a-1;__schedule;[S]": 2.5}


def test_other_events_and_their_stacks_are_skipped() -> None:
    text = (
        "app    10     1.000000:     250000 cpu-clock:\n"
        "\tffffffff821f8298 busy_loop ([kernel.kallsyms])\n"
        "\n" + switch("app", 10, "1.1", "S", "b", 11, NANOSLEEP[:1]) + record("app", 10, "1.2", "PERF_RECORD_SWITCH IN")
    )
    assert fold(text).counts == {"app-10;__schedule;[S]": 100000}


def test_lost_events_are_shown() -> None:
    text = (
        switch("app", 10, "1.1", "S", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.2", "PERF_RECORD_LOST lost 17")
        + record("app", 10, "1.3", "PERF_RECORD_SWITCH IN")
    )
    assert fold(text).metadata["lost events"] == "17 (some waits are missing or unpaired)"


def test_single_frame_on_the_header_line_without_call_graph() -> None:
    text = (
        "app    10     1.000000: sched:sched_switch: prev_comm=app prev_pid=10 prev_prio=120 prev_state=S "
        "==> next_comm=b next_pid=11 next_prio=120 ffffffff821f8298 __schedule+0x618 ([kernel.kallsyms])\n"
        + record("app", 10, "1.000020", "PERF_RECORD_SWITCH IN")
    )
    assert fold(text).counts == {"app-10;__schedule;[S]": 20}


def test_format_ns() -> None:
    assert [format_ns(n) for n in (85_000, 12_340_000, 2_941_000_000)] == ["85 µs", "12.3 ms", "2.941 s"]


def test_switch_record_without_sched_switch_still_counts_the_wait() -> None:
    """-- COMMAND: switch records start at fork, the tracepoint at exec; lost samples look the same."""
    text = (
        record("perf-exec", 10, "1.000000", "PERF_RECORD_SWITCH OUT preempt")
        + record("perf-exec", 10, "1.000300", "PERF_RECORD_SWITCH IN")
        + record("perf-exec", 10, "1.000400", "PERF_RECORD_SWITCH OUT")
        + record("app", 10, "1.000900", "PERF_RECORD_SWITCH IN")
    )
    profile = fold(text)
    assert profile.counts == {
        "perf-exec-10;[no sched_switch record];[R]": 300,
        "perf-exec-10;[no sched_switch record];[?]": 500,
    }
    assert profile.metadata["without stack"] == "2 waits seen only as PERF_RECORD_SWITCH (800 µs)"


def test_sched_switch_then_switch_out_record_is_one_wait() -> None:
    text = (
        switch("app", 10, "1.000000", "S", "b", 11, NANOSLEEP[:1])
        + record("app", 10, "1.000005", "PERF_RECORD_SWITCH OUT")
        + record("app", 10, "1.001000", "PERF_RECORD_SWITCH IN")
    )
    assert fold(text).counts == {"app-10;__schedule;[S]": 1000}


def test_records_of_an_exited_thread_open_no_wait() -> None:
    text = (
        record("app", 13, "3.000000", "PERF_RECORD_EXIT(10:13):(10:10)")
        + record("app", 13, "3.000010", "PERF_RECORD_SWITCH_CPU_WIDE OUT          next pid/tid:     0/0")
        + record("b", 11, "3.500000", "PERF_RECORD_SWITCH_CPU_WIDE OUT          next pid/tid:     0/0")
        + record("b", 11, "3.600000", "PERF_RECORD_SWITCH_CPU_WIDE IN  prev pid/tid:     0/0")
    )
    assert fold(text).counts == {"b-11;[no sched_switch record];[?]": 100000}


def test_threads_without_any_record_are_named_not_dropped() -> None:
    """perf lists the threads it attached to (time-0 COMM records); one that never switches is named."""
    text = (
        record("app", 0, "0.000000", "PERF_RECORD_COMM: app:10/10")
        + record("app", 0, "0.000000", "PERF_RECORD_COMM: app worker:11/11")
        + switch("app", 10, "1.0", "S", "b", 12, NANOSLEEP[:1])
        + record("app", 10, "1.5", "PERF_RECORD_SWITCH IN")
    )
    diagnostics = Diagnostics(echo=False)
    collapser = SchedCollapser(OffCpuOptions(), diagnostics)
    folder = OffCpuFolder(OffCpuOptions())
    for wait in collapser.iter_waits(text.encode().splitlines(keepends=True), "t.txt"):
        folder.add(wait)
    assert collapser.silent == [(11, b"app_worker-11")]
    meta = folder.profile(folder.totals(collapser.window_ns, 0, [name for _, name in collapser.silent])).metadata
    assert meta["no switch in the window"] == "app_worker-11 (blocked, or running, throughout: not drawn)"


def test_window_cuts_waits_to_its_span() -> None:
    """--window START,END: a wait across an edge keeps its stack and only the part inside."""
    text = (
        switch("app", 10, "1.000000", "S", "b", 11, NANOSLEEP)  # 1.0 .. 1.4, window from 1.3
        + record("app", 10, "1.400000", "PERF_RECORD_SWITCH IN")
        + switch("app", 10, "1.500000", "D", "b", 11, NANOSLEEP[:1])  # 1.5 .. 1.9, window to 1.6
        + record("app", 10, "1.900000", "PERF_RECORD_SWITCH IN")
        + switch("app", 10, "2.000000", "R", "b", 11, NANOSLEEP[:1])  # after the window
        + record("app", 10, "2.100000", "PERF_RECORD_SWITCH IN")
    )
    profile = fold(text, OffCpuOptions(window=Window(1.3, 1.6)))
    assert profile.counts == {f"app-10;{NANOSLEEP_STACK};[S]": 100000, "app-10;__schedule;[D]": 100000}
    assert profile.metadata["window"] == "300.0 ms"
