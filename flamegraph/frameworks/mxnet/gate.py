"""`record --memory --mxnet`: perf's events start disabled and the profiled process enables them once
its `import mxnet` has finished, through perf's control fifo.

Importing mxnet 1.9.1 calls malloc ~260,000 times (measured with the malloc probe): every one a
record with its stack, and all before the profiler runs, so none of them can be under an operator.
The bytes per operator need only what comes after, and the recording, both perf script passes
and the fold shrink by that much (a 5-step Dense model: 4,700 records instead of ~280,000).

    recorder:   args, env = open_gate(DIR)   # DIR/perf-control + DIR/perf-ack (fifos), perf's
                                             # `-D -1 --control fifo:CTL,ACK`, and FLAMEGRAPH_PERF_GATE
    process:    enable(env)                  # "enable\\n" to CTL, then perf's "ack" on ACK (or a
                                             # reason why not): the caller goes on either way

Standard library only: the process side runs inside the profiled program.
"""

from __future__ import annotations

import os
import select
import stat
import time
from collections.abc import Mapping
from pathlib import Path

GATE = "FLAMEGRAPH_PERF_GATE"  # "CTL:ACK", the fifos' paths, in the program's environment
CONTROL, ACK = "perf-control", "perf-ack"
ACK_SECONDS = 5.0  # perf answers from its main loop within milliseconds; a dead perf never does
RECORDED_FROM = "from the end of `import mxnet` on (perf's events enabled by the hook; the import's own left out)"


def open_gate(directory: Path) -> tuple[list[str], dict[str, str]]:
    """The two fifos in our private `directory` (stale ones removed), perf's arguments and the
    program's environment. perf opens both fifos itself (read-write: it never blocks on them)."""
    paths = [directory / CONTROL, directory / ACK]
    for path in paths:
        path.unlink(missing_ok=True)
        os.mkfifo(path, 0o600)
    control, ack = (str(p) for p in paths)
    return ["-D", "-1", "--control", f"fifo:{control},{ack}"], {GATE: f"{control}:{ack}"}


def enable(environment: Mapping[str, str]) -> str | None:
    """Ask perf to enable its events and wait for its acknowledgement: None once done, else why not
    (one line). Nothing to do (None) when the recorder set no gate."""
    value = environment.get(GATE)
    if not value:
        return None
    control, _, ack = value.partition(":")
    try:
        for path in (control, ack):
            if not stat.S_ISFIFO(os.stat(path).st_mode):
                return f"{path} is not a fifo: perf's events were not enabled"
        reader = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)  # perf holds both open: neither open blocks
        try:
            writer = os.open(control, os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.write(writer, b"enable\n")
            finally:
                os.close(writer)
            return _wait_for_ack(reader)
        finally:
            os.close(reader)
    except OSError as err:  # ENXIO: no perf reading the fifo (it has ended)
        return f"perf's events could not be enabled ({err.strerror}): no allocations recorded"


def _wait_for_ack(reader: int) -> str | None:
    deadline = time.monotonic() + ACK_SECONDS
    answer = b""
    while b"ack" not in answer:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([reader], [], [], left)[0]:
            return f"perf did not acknowledge enabling its events within {ACK_SECONDS:.0f} s"
        chunk = os.read(reader, 64)
        if not chunk:  # no writer yet: perf opened it read-write, so this is a perf that has gone
            return "perf closed its acknowledgement fifo: its events may not be enabled"
        answer += chunk
    return None
