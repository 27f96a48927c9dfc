"""A pipeline's scratch perf.data (kept when anything goes wrong after perf recorded), the folded stacks
kept when an output cannot be written at the end, how a recorded
command ended, in words, and the commands' exit after it (as a shell passes a status through)."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..io.perf import describe_exit
from ..io.private import scratch_dir

if TYPE_CHECKING:
    from ..io.sidecar import Context
    from ..model import FoldedProfile
    from ..record.spec import Recording


SCRATCH_LABEL = "perf.data (scratch)"


class ScratchRecording:
    """perf.data in a scratch directory unless the user named a path; removed after success, kept (and
    its path printed) when the run ends otherwise once perf has recorded (a later step failed, Ctrl-C,
    SIGTERM), so nothing recorded is lost. No scratch directory outlives a run that did not record.

        with ScratchRecording("flamegraph-record-", perf_data, status.note) as session:
            recording = record(spec, session.data_path, on_recording=session.mark_recorded)
            ...
    """

    def __init__(self, prefix: str, perf_data: Path | None, note: Callable[[str], None]) -> None:
        self._prefix = prefix
        self._perf_data = perf_data
        self.scratch: Path | None = None
        self.recorded = False
        self._note = note

    @property
    def data_path(self) -> Path:
        if self._perf_data is not None:
            return self._perf_data
        if self.scratch is None:
            self.scratch = scratch_dir(self._prefix)
        return self.scratch / "perf.data"

    @property
    def label(self) -> str | None:
        """How messages on the recording's lines name it: a scratch file is removed after the run, so
        not by its path (the path is said when the file is kept); None: the user's file, by its path."""
        return SCRATCH_LABEL if self._perf_data is None else None

    def mark_recorded(self) -> None:
        self.recorded = True

    def __enter__(self) -> ScratchRecording:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        # Any exception: ours, Ctrl-C, SIGTERM, and a bug too (its traceback must not cost the data).
        data = self.data_path if self._perf_data is not None or self.scratch is not None else None
        if error is not None and self.recorded and data is not None and data.is_file():
            self._note(f"the recording is kept in {data}")
            return
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def keep_folded(profile: FoldedProfile, context: Context, stem: str, note: Callable[[str], None]) -> Path | None:
    """After an output failed (a disk that filled during the run): the folded stacks (small) and their
    capture facts in a new private directory under $TMPDIR (mkdtemp, files created exclusively), and one
    line naming them and how to draw them; None, said, when even that cannot be written."""
    import os
    import shlex

    from ..io.diagnostics import OutputFailed
    from ..io.folded import iter_folded_lines
    from ..io.private import create_file, scratch_dir
    from ..io.sidecar import render_sidecar

    try:
        directory = scratch_dir("flamegraph-kept-")
    except OutputFailed as err:
        note(f"the folded stacks could not be kept either: {err}")
        return None
    # 200 bytes, not characters (a name holds 255 bytes: 83 CJK characters and .folded.json passed it)
    name = os.fsencode(stem)[:200].decode("utf-8", "ignore") + ".folded"
    try:
        for file, data in ((name, b"".join(iter_folded_lines(profile))), (f"{name}.json", render_sidecar(context))):
            with os.fdopen(create_file(directory, file, 0o600), "wb") as out:
                out.write(data)
    except OSError as err:
        shutil.rmtree(directory, ignore_errors=True)
        note(f"the folded stacks could not be kept either: {directory}: {err.strerror or err}")
        return None
    path = directory / name
    note(f"the folded stacks are kept in {path} (flamegraph render {shlex.quote(str(path))} -o OUT.svg draws them)")
    return path


def exit_like_the_command(recording: Recording, note: Callable[[str], None]) -> None:
    """After the graph is drawn: exit 143 or 129 when SIGTERM or SIGHUP stopped the recording, as
    documented; else, when the launched command ended by itself with a non-zero status, or was killed
    by a signal we did not send, say so in one line and exit with its status, as a shell gives it
    (128+N for signal N): `flamegraph record -- pytest` fails in CI when the tests fail, as `time`
    and `timeout` pass a status through. Ctrl-C and --duration end in 0."""
    if recording.stop_signal in (signal.SIGTERM, signal.SIGHUP):
        raise SystemExit(128 + recording.stop_signal)
    exit_with_the_commands_status(recording.exit_status, note)


def exit_with_the_commands_status(code: int | None, note: Callable[[str], None], where: str = "") -> None:
    """A non-zero status (negative: the signal that killed it) said in one line and passed on, as a shell
    gives it; `where`: ' on HOST' for a fleet."""
    if not code:
        return
    status = code if code > 0 else 128 - code
    note(f"flamegraph: exit {status}: {command_ended(code)}{where} (the graph was drawn)")
    raise SystemExit(status)


def pid_exited(recording: Recording, pid: int | None) -> str | None:
    """'pid 4242 exited during the recording: ...' when the process attached with --pid is gone and no
    Ctrl-C stopped the recording (so --duration was cut short), whichever way the waits were paired."""
    from ..record.proc import alive

    if pid is None or alive(pid) or recording.interrupted:
        return None
    return f"pid {pid} exited during the recording: the graph covers it up to its exit"


def command_ended(code: int) -> str:
    """'the command exited with status 1', 'the command was killed by SIGSEGV'."""
    if code >= 0:
        return f"the command exited with status {code}"
    return f"the command was {describe_exit(code)}"
