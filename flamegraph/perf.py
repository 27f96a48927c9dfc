"""Building and running perf command lines (`perf script` here; recording lives beside it)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

from .diagnostics import NotPermitted, PerfFailed, PerfMissing

PERF_DATA_MAGIC = (b"PERFILE2", b"2ELIFREP")  # little- and big-endian perf.data headers
INSTALL_HINT = "install it with `apt-get install linux-perf` (Debian) or your distribution's perf package"


def find_perf() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise PerfMissing(f"perf is not installed: {INSTALL_HINT}")
    return perf


def script_command(perf_data: str, with_pid: bool = False, extra: Sequence[str] = ()) -> list[str]:
    """`perf script` for folding: --no-inline (addr2line inline resolution is ~130x slower on DWARF)."""
    command = [find_perf(), "script", "-i", perf_data, "--no-inline"]
    if with_pid:
        command += ["-F", "+pid"]  # the reference's --pid/--tid need "comm pid/tid" headers
    return [*command, *extra]


def explain_failure(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


@contextmanager
def stream_script(command: list[str], label: str) -> Iterator[IO[bytes]]:
    """Run `perf script`, yield its stdout as it comes; a failure becomes one clear error."""
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1 << 20)
    except OSError as err:
        raise PerfFailed(f"{label}: cannot run perf: {err.strerror}") from None
    assert proc.stdout is not None and proc.stderr is not None
    try:
        yield proc.stdout
    finally:
        proc.stdout.close()
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        code = proc.wait()
    if code != 0:
        message = explain_failure(stderr)
        if "not owned by current user" in message or "Permission denied" in message:
            raise NotPermitted(f"{label}: perf script: {message}")
        raise PerfFailed(f"{label}: perf script failed (exit {code}): {message}")
