r"""Who ended a wait: a `sched_waking` (or `sched_wakeup`) record -> the frames folded above the
blocked stack, after a `--` separator frame (as bcc's offwaketime draws them).

The record's header names the task that was running when the wakeup happened, its fields name the
task woken, its stack is the running task's (`perf record -a -e sched:sched_waking --call-graph dwarf`):
    wake 12825 10664.565719: sched:sched_waking: comm=wake pid=12824 prio=120 target_cpu=001
    \tffffffff813b4986 try_to_wake_up ([kernel.kallsyms])
    \tffffffff816e4dc7 anon_pipe_write ([kernel.kallsyms])
    \t            11c8 writer_sends (/tmp/wake)                         <- a task woke it: that task
    python 12120 10671.663199: sched:sched_waking: comm=wake pid=13081 prio=120 target_cpu=001
    \tffffffff8142cace hrtimer_wakeup ([kernel.kallsyms])
    \tffffffff81000e06 asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
    \t          1d2059 PyLong_FromString (/usr/bin/python3.11)        <- interrupted, not the waker

A wakeup in interrupt context (hard or soft irq, ksoftirqd) has no task waker: whoever happened to
run on that CPU is dropped, and the wait says `[timer]` (a timer's callback woke it) or `[irq]`;
the interrupt's own frames stay. A signal's delivery says `[signal]`, before its sender (a task, or
a timer). What it says is read off the recorded frames, never guessed from the blocked stack.
"""

from __future__ import annotations

import re

SEPARATOR = b"--"
TIMER = b"[timer]"
IRQ = b"[irq]"
SIGNAL = b"[signal]"
IDLE = b"[idle]"  # the idle task woke it outside any interrupt frame we can see (stack cut short)
EXITED = b"[exited task]"  # a task perf could no longer name (`:-1 -1`: exiting, its pid released)
NOT_RECORDED = b"[waker not recorded]"  # no wakeup record between the switch-out and the switch-in

# Where an interrupt enters (x86-64 and arm64 names as perf prints them): from the leaf to the first
# of them is the interrupt; below it, what it interrupted (a task, or the scheduler of one, or another
# interrupt: only the innermost is the cause).
ENTRY = re.compile(rb"^(asm_sysvec_|asm_common_interrupt|asm_exc_|run_ksoftirqd|el[01]h?_64_irq|gic_handle_irq)")
# Frames that run only in interrupt context: without an entry frame (a stack cut short, softirqs run
# by a task's local_bh_enable), the interrupt reaches the outermost of them.
INTERRUPT = re.compile(
    rb"^(asm_sysvec_|asm_common_interrupt|sysvec_|__sysvec_|common_interrupt|handle_softirqs|__do_softirq"
    rb"|do_softirq|irq_exit|__irq_exit_rcu|run_ksoftirqd|hrtimer_interrupt|handle_irq_event|handle_edge_irq"
    rb"|handle_fasteoi_irq|__handle_irq_event_percpu|el[01]h?_64_irq|el[01]_interrupt|gic_handle_irq"
    rb"|__flush_smp_call_function_queue|generic_smp_call_function_single_interrupt)"
)
# A timer's callback on the way to the wakeup (hrtimers: nanosleep, futex timeouts, timerfd,
# setitimer; timer wheel: schedule_timeout).
TIMER_CALLBACK = re.compile(
    rb"^(hrtimer_wakeup|__hrtimer_run_queues|hrtimer_run_queues|call_timer_fn|__run_timers|run_timer_softirq"
    rb"|process_timeout|it_real_fn|posix_timer_fn|timerfd_tmrproc|alarmtimer_fired|tick_sched_timer)"
)
SIGNAL_DELIVERY = re.compile(
    rb"^(signal_wake_up_state|complete_signal|__send_signal_locked|send_signal_locked|__send_signal"
    rb"|do_send_sig_info|group_send_sig_info|send_sigqueue|send_sig_info)"
)
ANNOTATION = re.compile(rb"_\[[kwij]\]$")


def _bare(name: bytes) -> bytes:
    return ANNOTATION.sub(b"", name)


def waker_frames(thread: bytes, tid: int, named: list[bytes], kept: list[bytes]) -> tuple[bytes, bool]:
    """The frames above `--` for one wakeup record: its cause or waker frame, then the frames kept,
    root first; and whether a task (not an interrupt) did it.

    `thread` is the header's comm-tid; `named` the record's frames leaf first, kernel ones always
    named (the cause is read off them); `kept` the same frames as the graph keeps them (b'' where a
    frame is dropped, e.g. kernel frames with --no-kernel)."""
    bare = [_bare(name) for name in named]
    outer = next((i for i, name in enumerate(bare) if ENTRY.match(name)), -1)
    if outer < 0:
        outer = max((i for i, name in enumerate(bare) if INTERRUPT.match(name)), default=-1)
    signal = any(SIGNAL_DELIVERY.match(name) for name in bare[: outer + 1 if outer >= 0 else len(bare)])
    causes = [SIGNAL] if signal else []
    if outer >= 0:  # the interrupt's frames only: the task below it was only interrupted
        timer = any(TIMER_CALLBACK.match(name) for name in bare[: outer + 1])
        causes.append(TIMER if timer else IRQ)
        frames = [name for name in kept[: outer + 1] if name]
        return b";".join([*causes, *frames[::-1]]), False
    if tid <= 0:  # tid 0 is the idle task; -1 a task perf could not name (it was exiting)
        causes.append(IDLE if tid == 0 else EXITED)
        return b";".join([*causes, *[name for name in kept[::-1] if name]]), False
    return b";".join([*causes, thread, *[name for name in kept[::-1] if name]]), True


def is_waker_record(rest: bytes) -> bytes | None:
    """b'waking' or b'wakeup' for the two wakeup tracepoints' records, else None."""
    if rest.startswith(b"sched:sched_waking:"):
        return b"waking"
    if rest.startswith(b"sched:sched_wakeup:"):
        return b"wakeup"
    return None


# The fields (comm is at most 15 bytes: it cannot hold a second ' pid=... target_cpu=' itself).
WAKEE = re.compile(rb" pid=(-?\d{1,10}) prio=-?\d{1,10}(?: success=\d{1,10})? target_cpu=\d{1,10}")


def wakee_of(rest: bytes) -> int | None:
    """The woken task's tid from the record's fields: `comm=wake pid=12824 prio=120 target_cpu=001`."""
    found = WAKEE.search(rest)
    return int(found.group(1)) if found is not None else None
