"""Error classes, exit codes, the catalogue of input problems, and the run summary.

The CLI catches only `FlamegraphError` (and its children) and turns it into one line on
stderr plus the exit code below; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NamedTuple, TextIO

# Exit codes (documented in README "Exit codes").
EXIT_OK = 0
EXIT_USAGE = 2  # bad flags (typer's own code)
EXIT_BAD_INPUT = 3  # --strict found a problem, or the input held no usable sample
EXIT_NO_INPUT = 4  # input file missing, unreadable, or not a supported format
EXIT_NO_PERF = 5  # perf is not installed or failed to run
EXIT_NOT_PERMITTED = 6  # perf_event_paranoid / not root / tracefs not mounted
EXIT_NO_PROCESS = 7  # --pid names no running process
EXIT_NO_COMMAND = 8  # COMMAND to profile not found
# 9 is the workload's (collectors.mnist.EXIT_DATA: MNIST could not be fetched or verified).
EXIT_PARTIAL = 10  # fleet: the graph was drawn from some hosts only (the header and stderr say which and why)
EXIT_NO_CLUSTER = 11  # fleet: Dask missing, the scheduler unreachable or without workers, or no host answered
EXIT_INTERRUPTED = 130
EXIT_HANGUP = 129  # SIGHUP (128 + 1): recording stopped, graph drawn, as for Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM (128 + 15): likewise


class FlamegraphError(Exception):
    """A user-facing failure: one line of text and an exit code, never a traceback."""

    exit_code = EXIT_BAD_INPUT


class InputMissing(FlamegraphError):
    exit_code = EXIT_NO_INPUT


class NoSamples(FlamegraphError):
    exit_code = EXIT_BAD_INPUT


class StrictFailure(FlamegraphError):
    exit_code = EXIT_BAD_INPUT


class OutputFailed(FlamegraphError):
    """An output could not be written (full disk, no permission, not a file we write to); the
    existing file, if any, is left as it was."""

    exit_code = EXIT_NO_INPUT  # the documented "output not writable" code


class BadCounts(FlamegraphError):
    """Counts, or a total, or a total times --factor, too large for a float: nothing to draw honestly."""

    exit_code = EXIT_BAD_INPUT


class PerfMissing(FlamegraphError):
    exit_code = EXIT_NO_PERF


class PerfFailed(FlamegraphError):
    exit_code = EXIT_NO_PERF


class NotPermitted(FlamegraphError):
    exit_code = EXIT_NOT_PERMITTED


class NoSuchProcess(FlamegraphError):
    exit_code = EXIT_NO_PROCESS


class CommandNotFound(FlamegraphError):
    exit_code = EXIT_NO_COMMAND


class PartialResult(FlamegraphError):
    """Raised after the outputs were written: some hosts of a fleet are missing from them."""

    exit_code = EXIT_PARTIAL


class ClusterUnavailable(FlamegraphError):
    exit_code = EXIT_NO_CLUSTER


class BadOption(FlamegraphError):
    """An option value we cannot use: a palette name, a regular expression, a colour, a size."""

    exit_code = EXIT_USAGE


class StopSignal(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C raises KeyboardInterrupt: a recording
    stops cleanly and is still drawn; any other step ends. Not an Exception: nothing may swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGHUP:
        leave_hung_up_terminal()
    raise StopSignal(signum)


def leave_hung_up_terminal() -> None:
    """After a hangup, writing to the terminal fails (EIO) and would turn the orderly stop into a
    traceback: stdout and stderr that were that terminal go to /dev/null, as nohup would have sent them."""
    for fd in (1, 2):
        if not os.isatty(fd):
            continue
        try:
            os.write(fd, b"")  # a hung-up terminal fails even this
        except OSError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)


def stop_on_signals() -> dict[int, Any]:
    """SIGTERM and SIGHUP act as Ctrl-C does: `StopSignal` in the main thread, so a recording stops
    perf cleanly and is still drawn, temporary files go and children are ended. An ignored signal
    (`nohup` ignores SIGHUP) stays ignored, and so does a handler the caller installed. The one path
    for both: the CLI calls it once, a library call (fleet) for its duration (`stopping_on_signals`).
    Returns the handlers it replaced."""
    replaced: dict[int, Any] = {}
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            replaced[signum] = signal.signal(signum, _raise_stop)
    return replaced


@contextmanager
def stopping_on_signals() -> Iterator[None]:
    """`stop_on_signals` for a block, then the handlers as they were; outside the main thread nothing
    (only it may handle signals: a library caller's thread leaves them to the caller)."""
    import threading  # here: every command starts with this module, only a library caller needs it

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced = stop_on_signals()
    try:
        yield
    finally:
        for signum, handler in replaced.items():
            signal.signal(signum, handler)


# The catalogue: every kind of input problem a parser may report, with what it means.
PROBLEM_KINDS: dict[str, str] = {
    "bad-frame-line": "expected '<addr> <symbol> (<dso>)'",
    "bad-header": "expected a sample header '<comm> <pid>[/<tid>] [<cpu>] <time>: [<period>] <event>:'",
    "orphan-frame": "frame line outside any sample (no header since the last blank line)",
    "exited-task": "sample of a task perf could no longer name (':-1 -1': it had exited); not folded",
    "bad-folded-line": "expected '<frame>;<frame>;... <count>'",
    "bad-count": "count is not a plain number (digits, optionally '.' and digits) that fits a float",
    "bad-switch": "sched_switch fields not understood",
    "bad-palette-line": "expected '<name>->rgb(<r>,<g>,<b>)'",
    "unpaired-switch-out": "thread switched out twice without a switch-in (events lost?); first wait not counted",
}

MAX_SHOWN_PER_KIND = 10  # the rest are only counted, so a garbage file cannot flood the terminal
MAX_TEXT = 80


def terminal_text(text: str) -> str:
    """Our line as the terminal gets it: a byte that is not UTF-8 (a path's, a command's; surrogate-escaped
    here) as `\\xNN`, as the SVG and the exports show it, not raw and not a UnicodeEncodeError."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def shorten(text: str, limit: int = MAX_TEXT) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Problem(NamedTuple):
    path: str
    line: int
    kind: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {PROBLEM_KINDS[self.kind]}, got {shorten(self.text)!r}"


class Diagnostics:
    """Collects input problems: prints the first few of each kind, counts all, ends with a summary.

    `strict=True` turns the first problem into a `StrictFailure`. A plain class, as every type a
    fold starts with: `dataclasses` imports `inspect`, a fifth of `fold`'s start-up.
    """

    def __init__(self, strict: bool = False, stream: TextIO | None = None, echo: bool = True) -> None:
        self.strict = strict
        self.stream = stream
        self.echo = echo  # False in --jobs workers: the parent prints what they found, in file order
        self.problems: list[Problem] = []  # the shown ones
        self.counts: Counter[str] = Counter()
        self.shown: Counter[str] = Counter()
        self.records = 0  # records seen, good or bad
        self.skipped_records = 0  # records not folded because of a problem (each counted once)
        self.notes: list[str] = []

    def report(self, path: str, line: int, kind: str, text: str) -> None:
        assert kind in PROBLEM_KINDS, kind
        problem = Problem(path, line, kind, text)
        if self.strict:
            raise StrictFailure(f"{problem} (--strict)")
        self.counts[kind] += 1
        self._show(problem)

    def _show(self, problem: Problem) -> None:
        if self.shown[problem.kind] < MAX_SHOWN_PER_KIND:
            self.shown[problem.kind] += 1
            self.problems.append(problem)
            self._emit(str(problem))

    def note(self, message: str) -> None:
        self.notes.append(message)
        self._emit(message)

    def merge(self, other: Diagnostics) -> None:
        """Fold in a worker's diagnostics (already line-shifted) without re-printing them."""
        for problem in other.problems:
            self._show(problem)
        self.counts.update(other.counts)
        self.records += other.records
        self.skipped_records += other.skipped_records
        for message in other.notes:
            self.note(message)

    @property
    def skipped(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str | None:
        """'skipped 1 of 155 records: 1 bad-frame-line'; when the problem lines are not one per
        skipped record, both are counted: 'skipped 1 of 155 records; 3 problem lines: ...'."""
        if not self.counts:
            return None
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(self.counts.items()))
        hidden = self.skipped - sum(self.shown.values())
        more = f" ({hidden:,} not shown)" if hidden else ""
        plural = "s" if self.skipped != 1 else ""
        lines = "" if self.skipped == self.skipped_records else f"; {self.skipped:,} problem line{plural}"
        return f"skipped {self.skipped_records:,} of {self.records:,} records{lines}: {kinds}{more}"

    def finish(self) -> None:
        line = self.summary()
        if line:
            self._emit(line)

    def _emit(self, message: str) -> None:
        if self.echo:
            print(terminal_text(message), file=self.stream if self.stream is not None else sys.stderr)
