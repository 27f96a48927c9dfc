"""`offcpu --wakers`: each wait joined to the wakeup that ended it, the waker folded above a `--`.

Unit tests on perf script text (what the cause of a wakeup is read from: a task's stack, a timer's
or an interrupt's frames, a signal's delivery), then the known answer with real perf: a C program
(compiled here with gcc) whose reader thread blocks on a pipe until the writer thread writes to it
from `writer_sends`, and whose main thread sleeps in nanosleep until a timer wakes it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.programs import compile_c

from flamegraph.analysis.offcpu_threads import blocked_part, thread_roles, waker_part
from flamegraph.folding.offcpu import fold_offcpu_recording
from flamegraph.folding.perf_sched import OffCpuOptions, SchedCollapser
from flamegraph.folding.wakers import IDLE, IRQ, NOT_RECORDED, SIGNAL, TIMER, waker_frames
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile
from flamegraph.pipeline.scratch import SCRATCH_LABEL, ScratchRecording
from flamegraph.record import Recording, RecordSpec
from flamegraph.render import RenderOptions
from flamegraph.render.offcpu import blocked_in, offcpu_view

K = "([kernel.kallsyms])"


def frames_of(text: str) -> list[bytes]:
    return [name.encode() for name in text.split()]


# --- what woke: read off the waker record's frames (leaf first) ---------------------------------------


def test_a_task_waker_is_named_with_its_stack_root_first() -> None:
    named = frames_of("try_to_wake_up anon_pipe_write ksys_write entry_SYSCALL_64 write writer_sends start_thread")
    frames, task = waker_frames(b"wake-12", 12, named, named)
    assert task
    assert (
        frames == b"wake-12;start_thread;writer_sends;write;entry_SYSCALL_64;ksys_write;anon_pipe_write;try_to_wake_up"
    )


def test_a_timer_interrupt_drops_the_task_it_interrupted() -> None:
    named = frames_of(
        "try_to_wake_up hrtimer_wakeup __hrtimer_run_queues hrtimer_interrupt __sysvec_apic_timer_interrupt "
        "sysvec_apic_timer_interrupt asm_sysvec_apic_timer_interrupt PyLong_FromString main"
    )
    frames, task = waker_frames(b"python-77", 77, named, named)
    assert not task
    assert frames.split(b";")[0] == TIMER
    assert b"python-77" not in frames and b"PyLong_FromString" not in frames and b"main" not in frames
    assert frames.endswith(b"hrtimer_wakeup;try_to_wake_up")


def test_a_softirq_that_is_no_timer_is_an_irq() -> None:
    # RCU's softirq run on the way out of the timer *vector*: no timer callback on the way to the wakeup
    named = frames_of(
        "try_to_wake_up swake_up_one rcu_core handle_softirqs __irq_exit_rcu sysvec_apic_timer_interrupt "
        "asm_sysvec_apic_timer_interrupt perf_trace_init"
    )
    frames, task = waker_frames(b"wake-5", 5, named, named)
    assert (frames.split(b";")[0], task) == (IRQ, False)
    assert b"perf_trace_init" not in frames


def test_only_the_innermost_interrupt_is_the_cause() -> None:
    # a timer interrupt taken in the scheduler that a reschedule IPI ran: the IPI is not what woke
    named = frames_of(
        "try_to_wake_up hrtimer_wakeup __hrtimer_run_queues hrtimer_interrupt asm_sysvec_apic_timer_interrupt "
        "finish_task_switch __schedule schedule irqentry_exit_to_user_mode asm_sysvec_reschedule_ipi"
    )
    frames, _ = waker_frames(b"wake-5", 5, named, named)
    interrupt = b"asm_sysvec_apic_timer_interrupt;hrtimer_interrupt;__hrtimer_run_queues;hrtimer_wakeup;try_to_wake_up"
    assert frames == TIMER + b";" + interrupt


def test_ksoftirqd_running_the_timer_wheel_is_a_timer_not_a_task() -> None:
    named = frames_of(
        "try_to_wake_up process_timeout call_timer_fn __run_timers run_timer_softirq handle_softirqs "
        "run_ksoftirqd smpboot_thread_fn kthread ret_from_fork"
    )
    frames, task = waker_frames(b"ksoftirqd/1-22", 22, named, named)
    assert (frames.split(b";")[0], task) == (TIMER, False)
    assert b"ksoftirqd/1-22" not in frames and b"kthread" not in frames


def test_a_signal_says_so_before_its_sender() -> None:
    named = frames_of(
        "try_to_wake_up signal_wake_up_state complete_signal __send_signal_locked do_send_sig_info "
        "kill_pid_info __x64_sys_kill do_syscall_64 kill main"
    )
    frames, task = waker_frames(b"killer-9", 9, named, named)
    assert task
    assert frames.startswith(SIGNAL + b";killer-9;main;kill;")
    # a signal a timer sent (setitimer): no task
    named = frames_of("try_to_wake_up signal_wake_up_state complete_signal it_real_fn __hrtimer_run_queues "
                      "hrtimer_interrupt asm_sysvec_apic_timer_interrupt busy_loop")  # fmt: skip
    frames, task = waker_frames(b"busy-3", 3, named, named)
    assert frames.split(b";")[:2] == [SIGNAL, TIMER] and not task and b"busy" not in frames


def test_the_idle_task_is_never_a_waker_and_dropped_frames_stay_dropped() -> None:
    named = frames_of("try_to_wake_up do_idle cpu_startup_entry")
    assert waker_frames(b"swapper-0", 0, named, named)[0].split(b";")[0] == IDLE
    named = frames_of("try_to_wake_up anon_pipe_write entry_SYSCALL_64 write writer_sends")
    kept = [b"", b"", b"", b"write", b"writer_sends"]  # --no-kernel: the cause is still read off all frames
    assert waker_frames(b"w-4", 4, named, kept) == (b"w-4;writer_sends;write", True)


# --- the join: the last wakeup of the thread between its switch-out and its switch-in -----------------

SWITCH = (
    "{comm} {tid} {t}: sched:sched_switch: prev_comm={comm} prev_pid={tid} prev_prio=120 prev_state={state} ==> "
    "next_comm=swapper/0 next_pid=0 next_prio=120"
)
IN = "{comm} {tid} {t}: PERF_RECORD_SWITCH IN"
WAKING = "{comm} {tid} {t}: sched:sched_waking: comm={wcomm} pid={wakee} prio=120 target_cpu=001"


def fold(text: str, **options: object) -> dict[str, int]:
    collapser = SchedCollapser(OffCpuOptions(wakers=True, **options), Diagnostics(echo=False))  # type: ignore[arg-type]
    lines = [line.encode() for line in text.strip("\n").split("\n")]
    stacks: dict[str, int] = {}
    for wait in collapser.iter_waits(lines, "t.txt"):
        key = wait.stack.decode()
        stacks[key] = stacks.get(key, 0) + wait.ns // 1000
    return stacks


def record(header: str, *frames: str) -> str:
    return (
        "\n".join([header, *(f"\tffff {frame} {K if not frame[0].isupper() else '(/bin/x)'}" for frame in frames)])
        + "\n\n"
    )


def test_a_wait_gets_the_last_wakeup_before_its_switch_in() -> None:
    text = (
        record(SWITCH.format(comm="reader", tid=10, t="1.000000", state="S"), "schedule", "anon_pipe_read", "Read")
        + record(WAKING.format(comm="writer", tid=11, t="1.001000", wcomm="reader", wakee=10),
                 "try_to_wake_up", "Early")
        + record(WAKING.format(comm="writer", tid=11, t="1.002000", wcomm="reader", wakee=10),
                 "try_to_wake_up", "Sends", "Writer")
        + record(IN.format(comm="reader", tid=10, t="1.003000"))
    )  # fmt: skip
    assert fold(text) == {"reader-10;Read;anon_pipe_read;schedule;[S];--;writer-11;Writer;Sends;try_to_wake_up": 3000}


def test_a_wakeup_before_the_switch_out_is_not_this_waits_and_preemption_has_none() -> None:
    text = (
        record(WAKING.format(comm="writer", tid=11, t="0.999000", wcomm="reader", wakee=10), "try_to_wake_up")
        + record(SWITCH.format(comm="reader", tid=10, t="1.000000", state="S"), "schedule")
        + record(IN.format(comm="reader", tid=10, t="1.003000"))
        + record(SWITCH.format(comm="reader", tid=10, t="1.004000", state="R+"), "schedule")
        + record(WAKING.format(comm="writer", tid=11, t="1.004500", wcomm="reader", wakee=10), "try_to_wake_up")
        + record(IN.format(comm="reader", tid=10, t="1.005000"))
    )  # fmt: skip
    assert fold(text) == {
        f"reader-10;schedule;[S];--;{NOT_RECORDED.decode()}": 3000,
        "reader-10;schedule;[R]": 1000,  # runnable all along: nobody woke it
    }


def test_without_wakers_wakeup_records_change_nothing() -> None:
    text = (
        record(SWITCH.format(comm="reader", tid=10, t="1.000000", state="S"), "schedule")
        + record(WAKING.format(comm="writer", tid=11, t="1.002000", wcomm="reader", wakee=10), "try_to_wake_up")
        + record(IN.format(comm="reader", tid=10, t="1.003000"))
    )  # fmt: skip
    collapser = SchedCollapser(OffCpuOptions(), Diagnostics(echo=False))
    waits = list(collapser.iter_waits([line.encode() for line in text.split("\n")], "t.txt"))
    assert [w.stack for w in waits] == [b"reader-10;schedule;[S]"]


def test_a_system_wide_recording_keeps_the_workload_from_its_exec() -> None:
    # perf (pid 50) launched the workload (pid 60, 'perf-exec' until its exec); pid 70 is someone else's
    text = (
        "perf 0/0 0.000000: PERF_RECORD_FORK(60:60):(50:50)\n\n"
        "other 0/0 0.000000: PERF_RECORD_COMM: other:70/70\n\n"
        + record(SWITCH.format(comm="perf-exec", tid=60, t="1.000000", state="S"), "pipe_read")
        + record(IN.format(comm="perf-exec", tid=60, t="1.001000"))
        + "prog 60/60 1.002000: PERF_RECORD_COMM exec: prog:60/60\n\n"
        + "prog 60/60 1.003000: PERF_RECORD_FORK(60:61):(60:60)\n\n"
        + record(SWITCH.format(comm="other", tid=70, t="1.004000", state="S"), "schedule")
        + record(SWITCH.format(comm="prog", tid=61, t="1.004000", state="S"), "futex_wait")
        + record(WAKING.format(comm="other", tid=70, t="1.005000", wcomm="prog", wakee=61), "try_to_wake_up", "Other")
        + record(IN.format(comm="other", tid=70, t="1.006000"))
        + record(IN.format(comm="prog", tid=61, t="1.006000"))
    )  # fmt: skip
    assert fold(text, target=(50, False)) == {"prog-61;futex_wait;[S];--;other-70;Other;try_to_wake_up": 2000}


def test_a_system_wide_recording_of_a_pid_opens_at_its_first_sample() -> None:
    # perf enables its tracepoints only once it has described every process: side-band records before
    # that (PERF_RECORD_SWITCH) would make waits without stacks and without wakers
    text = (
        "prog 0/0 0.000000: PERF_RECORD_COMM: prog:60/60\n\n"
        "prog 0/0 0.000000: PERF_RECORD_COMM: prog:60/61\n\n"
        + "prog 61 0.900000: PERF_RECORD_SWITCH_CPU_WIDE OUT\n\n"
        + record(IN.format(comm="prog", tid=61, t="0.950000"))
        + record(SWITCH.format(comm="other", tid=70, t="1.000000", state="S"), "schedule")
        + record(SWITCH.format(comm="prog", tid=61, t="1.004000", state="S"), "futex_wait")
        + record(WAKING.format(comm="prog", tid=60, t="1.005000", wcomm="prog", wakee=61), "try_to_wake_up", "Main")
        + record(IN.format(comm="prog", tid=61, t="1.006000"))
    )  # fmt: skip
    assert fold(text, target=(60, True)) == {"prog-61;futex_wait;[S];--;prog-60;Main;try_to_wake_up": 2000}


def test_records_of_exiting_tasks_are_read_not_warned_about() -> None:
    """newcomer10 b-5: an all-CPU recording holds the last records of every task that exits on the machine,
    which perf script prints without ids (`:-1 -1`, the kernel having released the pid). They were ~10
    warnings per run citing a scratch perf.data gone by then; they are records like any: the exiting
    task's own last switch-out is no wait, the thread it switches in and the thread it wakes count."""
    exited = ":-1    -1 [001] {t}: "
    text = (
        "perf 0/0 0.000000: PERF_RECORD_FORK(60:60):(50:50)\n\n"
        "prog 60/60 1.002000: PERF_RECORD_COMM exec: prog:60/60\n\n"
        "prog 60/60 1.003000: PERF_RECORD_FORK(60:61):(60:60)\n\n"
        + record(SWITCH.format(comm="prog", tid=61, t="1.004000", state="S"), "futex_wait")
        + record(exited.format(t="1.004500") + "sched:sched_waking: comm=prog pid=61 prio=120 target_cpu=001",
                 "try_to_wake_up", "release_task", "do_exit")
        + record(exited.format(t="1.006000") + "sched:sched_switch: prev_comm=python prev_pid=80 prev_prio=120 "
                 "prev_state=X ==> next_comm=prog next_pid=61 next_prio=120", "__schedule", "do_task_dead")
        + exited.format(t="1.006001") + "PERF_RECORD_SWITCH_CPU_WIDE OUT          next pid/tid:    61/61\n\n"
    )  # fmt: skip
    diagnostics = Diagnostics(echo=False)
    collapser = SchedCollapser(OffCpuOptions(wakers=True, target=(50, False)), diagnostics)
    waits = list(collapser.iter_waits([line.encode() for line in text.split("\n")], "t.txt"))
    assert [(w.stack.decode(), w.ns) for w in waits] == [
        ("prog-61;futex_wait;[S];--;[exited task];do_exit;release_task;try_to_wake_up", 2_000_000)
    ]
    assert not diagnostics.counts and diagnostics.summary() is None
    named = frames_of("try_to_wake_up release_task do_exit")
    assert waker_frames(b":-1--1", -1, named, named) == (b"[exited task];do_exit;release_task;try_to_wake_up", False)


def test_messages_on_a_scratch_recordings_lines_do_not_name_its_path(tmp_path: Path) -> None:
    """newcomer10 b-5: a scratch perf.data is removed after the run, before its messages are read: they
    name it `perf.data (scratch)`; the user's own --perf-data file is named by its path."""
    data = tmp_path / "perf.data"  # perf script text stands in for it: read the same way
    data.write_text("damaged header\n\n" + record(SWITCH.format(comm="p", tid=7, t="1.0", state="S"), "schedule")
                    + record(IN.format(comm="p", tid=7, t="1.5")))  # fmt: skip
    with ScratchRecording("flamegraph-test-", None, print) as scratch, ScratchRecording("x", data, print) as own:
        labels = [scratch.label, own.label]
    assert labels == [SCRATCH_LABEL, None]
    for label, named in ((SCRATCH_LABEL, SCRATCH_LABEL), (None, str(data))):
        recording = Recording(data, RecordSpec(pid=7), {}, 1.0, label=label)
        diagnostics = Diagnostics(echo=False)
        fold_offcpu_recording(recording, OffCpuOptions(), diagnostics)
        assert [(p.path, p.line, p.kind) for p in diagnostics.problems] == [(named, 1, "bad-header")]


# --- the view: roles of wakers, the functions that blocked, the chain palette -------------------------

WOKEN = {
    "python-1;_start;main;WaitForVar;pthread_cond_wait;futex_wait_[k];[S];--;python-2;clone3;ExecuteOprBlock;"
    "[op] FullyConnected;try_to_wake_up_[k]": 900.0,
    "python-1;_start;main;sleep;do_nanosleep_[k];[S];--;[timer];hrtimer_wakeup_[k];try_to_wake_up_[k]": 100.0,
    "python-2;clone3;ExecuteOprBlock;futex_wait_[k];[S];--;python-1;_start;main;Push;try_to_wake_up_[k]": 500.0,
}


def test_the_parts_of_a_woken_stack() -> None:
    frames = next(iter(WOKEN)).split(";")
    assert blocked_part(frames)[-1] == "[S]"
    assert waker_part(frames)[0] == "python-2"
    assert waker_part(list(WOKEN)[1].split(";")) == (None, [])
    assert thread_roles(WOKEN) == {"python-1": "main", "python-2": "engine worker"}


def test_the_view_labels_the_waker_and_blocks_in_the_waiting_function() -> None:
    profile = FoldedProfile(dict(WOKEN), "microseconds", "sched:sched_switch", window_us=2000.0)
    view = offcpu_view(profile, show_idle=True)
    assert any(";--;python-2 (engine worker);" in stack for stack in view.counts)
    assert any(
        stack.startswith("python-2 (engine worker);") and ";--;python-1 (main);" in stack for stack in view.counts
    )
    assert dict(blocked_in(WOKEN, 5)) == {"WaitForVar [S]": 900.0, "main [S]": 100.0, "ExecuteOprBlock [S]": 500.0}
    assert RenderOptions().palette_for(profile) == "chain"
    plain = FoldedProfile({"a;b;[S]": 1.0}, "microseconds", "sched:sched_switch")
    assert RenderOptions().palette_for(plain) == "io"


# --- the known answer, with real perf ------------------------------------------------------------------

PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
enum { ROUNDS = 20 };

static void burn_us(long us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

/* perf's DWARF unwinder sometimes skips the direct caller of a libc syscall wrapper: the
   functions the test looks for are one call above it */
__attribute__((noinline)) void put_byte(void) { char c = 'x'; if (write(fds[1], &c, 1) != 1) abort(); }
__attribute__((noinline)) void writer_sends(void) { put_byte(); __asm__ volatile(""); }
__attribute__((noinline)) void get_byte(void) { char c; if (read(fds[0], &c, 1) != 1) abort(); }
__attribute__((noinline)) void reader_waits(void) { for (int i = 0; i < ROUNDS; i++) get_byte(); }
__attribute__((noinline)) void nap(void) { struct timespec t = {0, 40000000L}; nanosleep(&t, NULL); }
__attribute__((noinline)) void sleeper_sleeps(void) { for (int i = 0; i < 10; i++) nap(); }

static void *writer(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "writer");
    for (int i = 0; i < ROUNDS; i++) { burn_us(20000); writer_sends(); }
    return NULL;
}

static void *reader(void *arg) { (void)arg; prctl(PR_SET_NAME, "reader"); reader_waits(); return NULL; }

int main(void) {
    pthread_t r, w;
    if (pipe(fds)) return 1;
    prctl(PR_SET_NAME, "sleeper");
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    sleeper_sleeps();
    pthread_join(r, NULL);
    pthread_join(w, NULL);
    return 0;
}
"""


def share(counts: dict[str, float], thread: str, blocked_in: str, woken_under: str) -> tuple[float, float]:
    """(µs, share) of `thread`'s voluntary waits blocked in `blocked_in` that sit under `woken_under`."""
    waits = {
        stack: us
        for stack, us in counts.items()
        if stack.startswith(f"{thread}-") and blocked_in in stack.partition(";--;")[0] and ";[S];" in f"{stack};"
    }
    total = sum(waits.values())
    under = sum(us for stack, us in waits.items() if woken_under in stack.partition(";--;")[2].split(";"))
    return total, under / total if total else 0.0


@pytest.mark.perf
def test_known_wakers_with_real_perf(tmp_path: Path) -> None:
    program = compile_c(tmp_path, "wakers", PROGRAM, "-pthread")
    folded, svg = tmp_path / "wakers.folded", tmp_path / "wakers.svg"
    proc = subprocess.run(
        [sys.executable, "-m", "flamegraph", "offcpu", "--wakers", "--folded", str(folded), "-o", str(svg),
         "--", str(program)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with folded.open("rb") as lines:
        counts = read_folded(lines, str(folded), Diagnostics(echo=False)).counts
    reader_us, by_writer = share(counts, "reader", "reader_waits", "writer_sends")
    sleeper_us, by_timer = share(counts, "sleeper", "sleeper_sleeps", "[timer]")
    print(f"reader blocked {reader_us / 1e3:.1f} ms, {by_writer:.1%} under writer_sends; "
          f"sleeper {sleeper_us / 1e3:.1f} ms, {by_timer:.1%} under [timer]\n{proc.stderr}")  # fmt: skip
    assert reader_us >= 0.8 * 20 * 20_000  # 20 rounds of 20 ms each: the writer burns before it writes
    assert by_writer >= 0.95
    # A wakeup with no record is said, not guessed. Seen on this perf 6.1 VM, 1 run in 3 even when quiet and
    # with nothing lost: no sched_wakeup record for the sleeper's hrtimer wakeups at all (all "[waker not
    # recorded]"); other runs have them all under [timer]. Never another thread: never a guessed waker.
    _, unrecorded = share(counts, "sleeper", "sleeper_sleeps", "[waker not recorded]")
    assert 0.95 * 400_000 <= sleeper_us and by_timer + unrecorded >= 0.95
    # (sleep is a libc wrapper: main blocked)
    # the waker is drawn with its thread: its name, never an interrupted bystander's
    assert any(";--;writer-" in stack for stack in counts)
    # the summary and the page say what the folded stacks say, whichever way this run's timer wakeups went
    woken_by = next(line for line in proc.stderr.splitlines() if line.startswith("woken by: "))
    page = svg.read_text()
    assert "writer-" in woken_by and "writer_sends" in page
    for waker, share_of_sleeps in (("[timer]", by_timer), ("[waker not recorded]", unrecorded)):
        if share_of_sleeps > 0:
            assert waker in woken_by and waker in page, woken_by


# Threads that start and end all the time: each exiting thread's last records have no ids (`:-1 -1`).
CHURN = r"""
#include <pthread.h>
#include <time.h>
static void *brief(void *arg) { struct timespec ts = {0, 1000000}; nanosleep(&ts, 0); return arg; }
int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < 300 * argc; i++) { pthread_t t; pthread_create(&t, 0, brief, 0); pthread_join(t, 0); }
    return 0;
}
"""


@pytest.mark.perf
def test_other_processes_exiting_threads_say_nothing(tmp_path: Path) -> None:
    """newcomer10 b-5: another process's threads exiting during a --wakers recording (all CPUs) gave ~10
    `exited-task` warnings citing lines of a scratch perf.data removed before they were read."""
    churn = compile_c(tmp_path, "churn", CHURN, "-pthread")
    other = subprocess.Popen([str(churn), "1", "2", "3", "4", "5"])  # ~1,500 threads over a few seconds
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "flamegraph", "offcpu", "--wakers", "--no-svg", "--folded", "w.folded",
             "--", sys.executable, "-c", "import time; time.sleep(0.5)"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        churning = other.poll() is None  # still making threads when the recording ended
    finally:
        other.kill()
        other.wait()
    assert proc.returncode == 0, proc.stderr
    assert churning, "the other process ended before the recording did: nothing exited during it"
    assert "exited-task" not in proc.stderr and "skipped" not in proc.stderr, proc.stderr
    assert "flamegraph-offcpu-" not in proc.stderr, proc.stderr  # no line names the scratch perf.data
    assert "woken by: [timer]" in proc.stderr


# --- the page in a real browser ------------------------------------------------------------------------



@pytest.mark.browser
@pytest.mark.parallel  # proven beside two busy loops
def test_the_page_shows_the_waker_in_its_own_colour_above_the_separator(tmp_path: Path) -> None:
    from helpers.clients import chromium
    from helpers.page import box, click, fill, frame, rgb

    from flamegraph.render import render_svg

    # python-2 only wakes: no stack of its own, its role read off its frames as a waker
    woken = {stack: us for stack, us in WOKEN.items() if stack.startswith("python-1;")}
    profile = FoldedProfile(woken, "microseconds", "sched:sched_switch", window_us=2000.0)
    svg = tmp_path / "wakers.svg"
    svg.write_bytes(render_svg(profile, RenderOptions(show_idle=True)))
    with chromium() as browser:
        browser.get(svg.as_uri())
        assert rgb(fill(browser, "--")) == (160, 160, 160)  # the separator: grey
        blocked = rgb(fill(browser, "WaitForVar"))
        assert blocked[2] > 200 and blocked[0] < 150  # the blocked stack: blue (the chain palette)
        waker = rgb(fill(browser, "[op] FullyConnected"))
        assert waker[1] > 160 and waker[2] > 160 and waker[0] < 120  # the waker's frames: aqua
        assert rgb(fill(browser, "[timer]"))[1] > 160  # a timer is on the waker's side too
        # the waker is named with its role, above the wait it ended, as wide as that wait
        assert box(browser, "python-2 (engine worker)")["w"] == pytest.approx(box(browser, "WaitForVar")["w"], abs=0.5)
        click(browser, frame(browser, "python-2 (engine worker)"))  # zooms on what that worker did to wake it
        assert box(browser, "[op] FullyConnected")["w"] == pytest.approx(box(browser, "python-2 (engine worker)")["w"])
        assert box(browser, "[timer]")["w"] == 0
