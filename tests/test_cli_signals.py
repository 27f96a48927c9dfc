"""SIGTERM and SIGHUP end any command as Ctrl-C does: one line, exit 143/129, no temporary file left;
a SIGHUP that `nohup` ignores stays ignored."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.children import interruptible

from flamegraph.io.diagnostics import EXIT_HANGUP, EXIT_INTERRUPTED, EXIT_TERMINATED

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
LINES = b"python 1 [000] 1.000000: 1 cpu-clock:\n\tffff1 leaf (/lib/x.so)\n\tffff2 main (/bin/python)\n\n"


STOPS = [
    (signal.SIGTERM, EXIT_TERMINATED, "stopped by SIGTERM"),
    (signal.SIGHUP, EXIT_HANGUP, "stopped by SIGHUP"),
    (signal.SIGINT, EXIT_INTERRUPTED, "interrupted"),  # typer ended it silently with 130
]


@pytest.mark.parametrize(("signum", "code", "said"), STOPS)
def test_fold_stopped_by_a_signal_leaves_no_temporary_file(tmp_path: Path, signum: int, code: int, said: str) -> None:
    out = tmp_path / "out" / "stacks.folded"
    out.parent.mkdir()
    proc = subprocess.Popen([*FLAMEGRAPH, "fold", "-", "-o", str(out)], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=interruptible)  # fmt: skip
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(LINES * 1000)
    proc.stdin.flush()  # and kept open: fold waits for more
    time.sleep(1.5)
    proc.send_signal(signum)
    try:
        proc.wait(timeout=30)  # before reading: a fold that lived on (the signal ignored) hung the suite here
    finally:
        proc.kill()
        proc.stdin.close()
    err = proc.stderr.read().decode()
    assert proc.returncode == code, err
    assert err.splitlines() == [f"flamegraph: {said}"], err
    assert list(out.parent.iterdir()) == []  # neither the output nor its temporary file


def test_an_ignored_sighup_stays_ignored() -> None:
    """Under `nohup` SIGHUP is ignored: flamegraph must not turn it back on."""
    code = (
        "import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "from flamegraph.io.diagnostics import stop_on_signals; stop_on_signals()\n"
        "assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN\n"
        "assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
