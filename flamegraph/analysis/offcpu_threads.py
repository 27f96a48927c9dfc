"""Threads of an off-CPU profile: their roles, their totals, which of them were idle, what blocked.

Pure functions on the folded text of `flamegraph offcpu` / `fold --offcpu` (stacks rooted at
comm-tid, ending with the thread state), so they work on any saved .folded file. Stacks it reads:
    python-3677;_start;...;mxnet::engine::ThreadedEngine::WaitForVar;...;futex_wait;schedule;[S] 2510502
    python-3690;clone3;start_thread;...;mxnet::engine::ThreadedEngine::ExecuteOprBlock;...;[R] 1700313
    python-3681;clone3;start_thread;blas_thread_server;pthread_cond_wait@@GLIBC_2.3.2;...;[S] 3642936

With `offcpu --wakers` a stack goes on past the state, after a `--` frame, with what woke the thread:
    python-3677;...;WaitForVar;...;schedule;[S];--;python-3690;clone3;...;ExecuteOprBlock;...;try_to_wake_up 2400
    python-3677;...;do_nanosleep;schedule;[S];--;[timer];asm_sysvec_apic_timer_interrupt;...;hrtimer_wakeup 500
The waker's thread (the frame after `--`) is labelled with its role as the roots are.

A thread is *idle* when it was off-CPU for (nearly) the whole window, (nearly) all of it in one
stack: a pool thread parked on its condition variable, or a main thread joining its workers. That
stack fills an off-CPU graph without saying anything about the run; the renderer leaves it out and
says so in one line unless asked to draw it. The thread's other waits are drawn (a main thread's
disk writes before its join are no less real for the join that followed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SEP = ";"
WAKER_SEP = "--"  # between the blocked stack and what woke it (offcpu --wakers), as bcc's offwaketime
WALL_EVENT = "{oncpu} + sched:sched_switch"  # record --wall's profiles: on-CPU samples and waits in one
IDLE_OF_WINDOW = 0.95  # off-CPU for at least this share of the window...
IDLE_IN_ONE_STACK = 0.95  # ...and at least this share of it in its largest stack
STATE = re.compile(r"^\[[A-Za-z?+:]{1,3}\]$")  # [S], [R], [D], [?]: the leaf offcpu adds
# Where a user-space call enters the kernel (syscalls, interrupts, faults): frames from here to the
# leaf are the kernel's part of the wait. Names as perf prints them on x86-64 and arm64.
KERNEL_ENTRY = re.compile(
    r"^(entry_SYSCALL|entry_INT80|asm_(sysvec|exc|common)_|asm_sysvec|irqentry_|ret_from_fork|el0t?_|el0_svc"
    r"|__sys_trace|common_interrupt|sysvec_|exc_page_fault|system_call|xen_)"
)
KERNEL_ANNOTATION = "_[k]"
# The C and C++ libraries' waiting functions: the function that blocked is the one that called them.
WAIT_WRAPPERS = re.compile(
    r"^(_*pthread_|__futex|futex|_*lll_|sem_|__new_sem|__GI_|__libc_|__condvar|__gthread|"
    r"std::condition_variable|std::this_thread::|std::mutex::|std::unique_lock|\[lib(c|pthread|stdc\+\+)[.-])"
    r"|^_*(nanosleep|clock_nanosleep|poll|ppoll|select|pselect6?|epoll_wait|epoll_pwait|syscall|read|write|"
    r"recv|recvfrom|recvmsg|send|sendto|sendmsg|accept4?|sleep|usleep|wait|waitpid|wait4|pause|sigwait|"
    r"sigtimedwait|msgrcv|semop|flock|fsync|fdatasync|open|openat|close)(@.*)?$"
    r"|@@?GLIBC"
)

# How a thread shows what it is: the first of these found in its frames (no program names its
# threads `python`). The main thread is the one whose stacks start at the program's entry point.
MAIN_ROOTS = ("_start", "__libc_start_main", "__libc_start_call_main", "main")
ROLES = (
    ("ExecuteOprBlock", "engine worker"),
    ("ConcurrentBlockingQueue", "engine worker"),
    ("ThreadedIter", "data prefetch"),
    ("profiler::Profiler", "profiler"),
    ("blas_thread_server", "OpenBLAS pool"),
    ("gomp_thread_start", "OpenMP pool"),
    ("tbb::", "TBB pool"),
)


@dataclass(frozen=True)
class ThreadTotal:
    """One root (comm-tid) of an off-CPU profile."""

    thread: str
    role: str | None
    total: float  # the profile's unit (microseconds)
    stacks: int
    largest: float  # weight of its largest stack
    idle: bool = False
    largest_stack: str = ""  # that stack (the first in text order of equal ones): an idle thread's idle stack


def root_of(stack: str) -> str:
    return stack.partition(SEP)[0]


def is_state(frame: str) -> bool:
    return STATE.match(frame) is not None


def is_wall(event: str | None) -> bool:
    """Whether a profile's event says it holds on-CPU samples beside the waits (record --wall)."""
    suffix = WALL_EVENT.format(oncpu="")
    return event is not None and event.endswith(suffix) and len(event) > len(suffix)


def _separator(frames: list[str]) -> int | None:
    """Where a stack's `--` is: never its first frame, which is the thread that waited (a folded line
    may name its root `--`: a damaged or hostile input, not a wait without a thread)."""
    try:
        return frames.index(WAKER_SEP, 1)
    except ValueError:
        return None


def blocked_part(frames: list[str]) -> list[str]:
    """A stack's frames up to its `--` (what blocked), without what woke it; never empty."""
    at = _separator(frames)
    return frames if at is None else frames[:at]


def waker_part(frames: list[str]) -> tuple[str | None, list[str]]:
    """The waking thread (comm-tid) after a stack's `--` and its frames; (None, []) for a timer, an
    interrupt or no waker ([timer], [irq], ...: no thread)."""
    at = _separator(frames)
    if at is None:
        return None, []
    rest = frames[at + 1 :]
    while rest and rest[0] == "[signal]":
        rest = rest[1:]
    if not rest or rest[0].startswith("["):
        return None, []
    return rest[0], rest[1:]


def role_of(frames: Iterable[str]) -> str | None:
    """The role a thread's frames show (every frame of every stack of one thread), None if none."""
    seen = list(frames)
    text = SEP.join(seen)
    for needle, role in ROLES:
        if needle in text:
            return role
    return None


def thread_roles(counts: Mapping[str, float]) -> dict[str, str]:
    """comm-tid -> role, for the threads whose frames say what they are."""
    frames: dict[str, set[str]] = {}
    main: set[str] = set()
    for stack in counts:
        parts = stack.split(SEP)
        waker, woke = waker_part(parts)
        parts = blocked_part(parts)
        frames.setdefault(parts[0], set()).update(parts[1:])
        if len(parts) > 1 and parts[1].startswith(MAIN_ROOTS):
            main.add(parts[0])
        if waker is not None:  # the waker's own stack says what it is too
            frames.setdefault(waker, set()).update(woke)
            if woke and woke[0].startswith(MAIN_ROOTS):
                main.add(waker)
    roles = {}
    for root, seen in frames.items():
        role = "main" if root in main else role_of(sorted(seen))
        if role is not None:
            roles[root] = role
    return roles


def thread_totals(counts: Mapping[str, float], window: float | None = None) -> list[ThreadTotal]:
    """Every root's total, largest first; `idle` set when `window` (same unit) is known."""
    totals: dict[str, list[float]] = {}
    heaviest: dict[str, str] = {}
    for stack, weight in counts.items():
        root = root_of(stack)
        entry = totals.setdefault(root, [0.0, 0.0, 0.0])
        entry[0] += weight
        entry[1] += 1
        if root not in heaviest or weight > entry[2] or (weight == entry[2] and stack < heaviest[root]):
            entry[2], heaviest[root] = weight, stack
    roles = thread_roles(counts)
    rows = []
    for thread, (total, stacks, largest) in totals.items():
        idle = bool(window) and is_idle(total, largest, window)  # type: ignore[arg-type]
        rows.append(ThreadTotal(thread, roles.get(thread), total, int(stacks), largest, idle, heaviest[thread]))
    rows.sort(key=lambda row: (-row.total, row.thread))
    return rows


def is_idle(total: float, largest: float, window: float) -> bool:
    return total >= IDLE_OF_WINDOW * window and largest >= IDLE_IN_ONE_STACK * total


def blocking_frame(frames: list[str]) -> str:
    """The function that blocked, in a root-first stack (root: comm-tid; leaf: the state): the last
    user-space frame before the kernel's part of the stack (or, without kernel frames, the frame
    under the state leaf), or rather its caller while that frame is a C library wait wrapper
    (`pthread_cond_wait`, `std::condition_variable::wait`...): WaitForVar, not pthread_cond_wait."""
    frames = blocked_part(frames)
    end = len(frames) - 1 if frames and is_state(frames[-1]) else len(frames)
    last = end - 1
    for index in range(1, end):
        frame = frames[index]
        if frame.endswith(KERNEL_ANNOTATION) or KERNEL_ENTRY.match(frame):
            if index == 1:
                return frame  # only kernel frames: a kernel thread, or a stack cut at the entry
            last = index - 1
            break
    if last < 1:
        return frames[last] if last >= 0 else ""
    caller = last
    while caller > 1 and WAIT_WRAPPERS.search(frames[caller]):
        caller -= 1
    return frames[caller] if not WAIT_WRAPPERS.search(frames[caller]) else frames[last]


def label_roots(counts: Mapping[str, float], labels: Mapping[str, str]) -> dict[str, float]:
    """The counts with each root renamed to its label (`python-3677` -> `python-3677 (main)`)."""
    if not labels:
        return dict(counts)
    renamed: dict[str, float] = {}
    for stack, weight in counts.items():
        root, sep, rest = stack.partition(SEP)
        key = labels.get(root, root) + sep + rest
        if ";--;" in key:  # the waking thread too
            blocked, _, woke = key.partition(";--;")
            waker, wsep, above = woke.partition(SEP)
            key = f"{blocked};--;{labels.get(waker, waker)}{wsep}{above}"
        renamed[key] = renamed.get(key, 0) + weight
    return renamed
