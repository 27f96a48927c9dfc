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

# A child that says when it is ready, and whether a SIGINT reached it (then it exits).
WATCH = """
import os, signal, sys, time
def hit(*_):
    with open(sys.argv[1], "w") as f:
        f.write("INT")
    os._exit(0)
signal.signal(signal.SIGINT, hit)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("ready")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
"""
# A parent that starts a watcher as a helper and one as a plain child (in its process group), prints their
# pids, and waits to be signalled. On SIGINT it lives on until the plain child has seen it, and as long again:
# had the helper been signalled too, it would have said so before our death killed it.
PARENT = """
import os, signal, subprocess, sys, time
from flamegraph.io import children
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
helper = children.start([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.DEVNULL)
plain = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[3]], stdin=subprocess.DEVNULL)
print(helper.pid, plain.pid, flush=True)
while not got:
    time.sleep(0.01)
deadline = time.monotonic() + 20
while plain.poll() is None and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.5)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def said(path: Path) -> str:
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_a_helper_is_out_of_our_group_and_dies_with_us(signum: int, tmp_path: Path) -> None:
    helper_says, plain_says = tmp_path / "helper", tmp_path / "plain"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, WATCH, str(helper_says), str(plain_says)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True,
                              preexec_fn=interruptible)  # fmt: skip
    assert parent.stdout is not None
    helper, plain = map(int, parent.stdout.readline().split())
    try:
        assert os.getpgid(helper) == helper != os.getpgid(parent.pid) == os.getpgid(plain)
        deadline = time.monotonic() + 30
        while not (said(helper_says) and said(plain_says)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (said(helper_says), said(plain_says)) == ("ready", "ready")  # their SIGINT handlers are set
        os.killpg(parent.pid, signum)  # the group: Ctrl-C in a terminal, or kill -9 -- -PGID
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while (alive(helper) or alive(plain)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(helper) and not alive(plain)
        if signum == signal.SIGINT:  # it reached a child of our group; the helper did not get it, our death
            assert (said(helper_says), said(plain_says)) == ("ready", "INT")  # (its parent-death signal) ended it
    finally:
        for pid in (helper, plain):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
