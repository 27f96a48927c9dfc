"""flamegraph.io.children: a helper runs in a process group of its own (a signal to ours does not reach it)
and dies with us (its parent-death signal), SIGKILL included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.children import interruptible

pytestmark = pytest.mark.parallel

# A parent that starts `sleep 60` as a helper, prints its pid, and waits to be signalled.
PARENT = """
import subprocess, sys, time
from flamegraph.io import children
helper = children.start(["sleep", "60"], stdout=subprocess.DEVNULL)
print(helper.pid, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_a_helper_is_out_of_our_group_and_dies_with_us(signum: int) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True,
                              start_new_session=True, preexec_fn=interruptible)  # fmt: skip
    assert parent.stdout is not None
    helper = int(parent.stdout.readline())
    try:
        assert os.getpgid(helper) == helper != os.getpgid(parent.pid)
        os.killpg(parent.pid, signum)  # the group: Ctrl-C in a terminal, or kill -9 -- -PGID
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while alive(helper) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(helper)  # SIGINT never reached it (its own group): our death did
    finally:
        if alive(helper):
            os.kill(helper, signal.SIGKILL)
