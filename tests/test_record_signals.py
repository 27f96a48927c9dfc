"""SIGTERM and SIGHUP stop `flamegraph record`/`offcpu` as Ctrl-C does: perf stopped cleanly, the command
it launched ended, the graph drawn from what was recorded, exit 143/129, no process left behind; and an
off-CPU wait still open when the recording stops is cut there, not at the last event."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flamegraph.diagnostics import EXIT_HANGUP, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, Diagnostics
from flamegraph.folded import read_folded

pytestmark = pytest.mark.perf

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
SPIN = ["sh", "-c", "while :; do :; done"]  # on-CPU until ended: SIGTERM from perf ends it


def load(path: Path) -> dict[str, float]:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics(echo=False)).counts


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    """flamegraph in a session of its own (so its leftovers can be found), TMPDIR in tmp_path."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.Popen(
        [*FLAMEGRAPH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )


def wait_for_line(proc: subprocess.Popen[str], text: str, timeout: float = 30) -> list[str]:
    """stderr lines up to the first one holding `text` (perf is recording once it shows progress)."""
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"no {text!r} from flamegraph: {''.join(seen)}")


def left_behind(session: int) -> list[str]:
    """Processes still alive in flamegraph's session (perf, the command it launched, perf script)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rpartition(")")[2].split()
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            found.append(f"{entry} {comm} {fields[0]}")
    return found


def finish(proc: subprocess.Popen[str], seen: list[str]) -> str:
    _, err = proc.communicate(timeout=90)
    deadline = time.monotonic() + 5  # an ended process may take a moment to be gone from /proc
    while left_behind(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left_behind(proc.pid) == [], "".join(seen) + err
    return "".join(seen) + err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, EXIT_TERMINATED), (signal.SIGHUP, EXIT_HANGUP)])
def test_record_stops_draws_and_exits_with_the_signal_code(tmp_path: Path, signum: int, code: int) -> None:
    svg, folded = tmp_path / "out.svg", tmp_path / "out.folded"
    proc = start(["record", "-o", str(svg), "--folded", str(folded), "--", *SPIN], tmp_path)
    seen = wait_for_line(proc, "recording")
    time.sleep(1.0)
    os.kill(proc.pid, signum)  # to flamegraph alone, as a service manager or a closed terminal does
    err = finish(proc, seen)
    assert proc.returncode == code, err
    name = signal.Signals(signum).name
    assert f"stopping the recording ({name} received" in err
    assert "Traceback" not in err
    assert sum(load(folded).values()) > 100, err  # ~1.5 s at 499 Hz, drawn from what was recorded
    assert svg.read_text().startswith("<?xml")
    assert f"(stopped by {name})" in svg.read_text()
    assert list((tmp_path / "tmp").iterdir()) == []  # the scratch perf.data went with the success


def test_sighup_of_a_terminal_that_is_gone_still_draws(tmp_path: Path) -> None:
    """A closed terminal: SIGHUP, and every write to it fails (EIO). The progress line, perf's
    relayed lines and our notes must not turn the stop into a traceback that loses the recording."""
    master, slave = os.openpty()
    folded = tmp_path / "h.folded"
    args = ["record", "--no-svg", "--folded", str(folded), "--", *SPIN]
    proc = subprocess.Popen([*FLAMEGRAPH, *args], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while b"recording" not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 1.0)[0]:
            seen += os.read(master, 4096)
    assert b"recording" in seen, seen
    time.sleep(1.0)
    os.close(master)  # the terminal is gone
    os.kill(proc.pid, signal.SIGHUP)
    proc.wait(timeout=90)
    deadline = time.monotonic() + 5
    while left_behind(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left_behind(proc.pid) == []
    assert proc.returncode == EXIT_HANGUP
    assert sum(load(folded).values()) > 100


def test_offcpu_stops_on_sigterm_and_cuts_the_open_wait_there(tmp_path: Path) -> None:
    folded = tmp_path / "off.folded"
    proc = start(["offcpu", "--no-svg", "--folded", str(folded), "--", "sleep", "30"], tmp_path)
    seen = wait_for_line(proc, "recording")
    time.sleep(1.5)
    os.kill(proc.pid, signal.SIGTERM)
    err = finish(proc, seen)
    assert proc.returncode == EXIT_TERMINATED, err
    waits = {s: w for s, w in load(folded).items() if s.startswith("sleep-") and "do_nanosleep" in s}
    assert len(waits) == 1, waits
    # sleep went to sleep soon after perf started and slept until perf stopped: at least the 1.5 s
    # after the progress line, not the few µs between its switch-out and the last event.
    assert 1_400_000 <= sum(waits.values()) <= 30_000_000, err


def test_offcpu_duration_cuts_a_launched_commands_open_wait_at_the_end(tmp_path: Path) -> None:
    """`-- sleep 30 --duration 2` showed the sleep as '27 µs' (cut at the last event, its own switch-out)."""
    folded = tmp_path / "d.folded"
    started = time.monotonic()
    proc = subprocess.run(
        [*FLAMEGRAPH, "offcpu", "--duration", "2", "--no-svg", "--folded", str(folded), "--", "sleep", "30"],
        capture_output=True, text=True, timeout=60, start_new_session=True,
    )  # fmt: skip
    assert proc.returncode == EXIT_OK, proc.stderr
    assert time.monotonic() - started < 20
    waits = {s: w for s, w in load(folded).items() if s.startswith("sleep-") and "do_nanosleep" in s}
    assert len(waits) == 1, waits
    assert 1_000_000 <= sum(waits.values()) <= 2_100_000, proc.stderr  # from its start to the 2 s stop
    assert "1 wait open at the end (1." in proc.stderr


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, EXIT_TERMINATED), (signal.SIGINT, EXIT_INTERRUPTED)])
def test_signal_while_folding_keeps_the_recording_and_ends_perf_script(tmp_path: Path, signum: int, code: int) -> None:
    """perf script is slow on big recordings: SIGTERM or Ctrl-C then must not lose the recording
    (the scratch perf.data was deleted) nor leave perf script running."""
    real = subprocess.run(["sh", "-c", "command -v perf"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(f'#!/bin/sh\n[ "$1" = script ] && exec sleep 30\nexec {real} "$@"\n')
    (bin_dir / "perf").chmod(0o755)
    folded = tmp_path / "f.folded"
    env_path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    args = ["record", "--duration", "1", "--no-svg", "--folded", str(folded), "--", *SPIN]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [*FLAMEGRAPH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PATH": env_path, "TMPDIR": str(tmp)},
    )  # fmt: skip
    seen = wait_for_line(proc, "recorded ")
    time.sleep(0.5)  # perf script (sleeping, here) has started
    os.kill(proc.pid, signum)
    err = finish(proc, seen)
    assert proc.returncode == code, err
    [kept] = list(tmp.glob("flamegraph-record-*/perf.data"))
    assert f"\nthe recording is kept in {kept}" in err
    if signum == signal.SIGTERM:
        assert err.rstrip().endswith("flamegraph: stopped by SIGTERM"), err
    assert not folded.exists()


def test_perf_stops_cleanly_when_flamegraph_is_killed(tmp_path: Path) -> None:
    """SIGKILL cannot be caught: perf learns of it (parent-death signal), writes its data, ends the command."""
    data = tmp_path / "k.data"
    proc = start(["record", "--perf-data", str(data), "--no-svg", "--folded", str(tmp_path / "k.folded"),
                  "--", *SPIN], tmp_path)  # fmt: skip
    seen = wait_for_line(proc, "recording")
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc, seen)
    assert proc.returncode == -signal.SIGKILL
    again = subprocess.run([*FLAMEGRAPH, "fold", str(data)], capture_output=True, text=True, timeout=60)
    assert again.returncode == EXIT_OK, again.stderr  # a complete perf.data
    assert "data size field is 0" not in again.stderr
