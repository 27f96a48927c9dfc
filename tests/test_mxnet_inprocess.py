"""The in-process part of --mxnet, run through the real hook with a stand-in `mxnet` package (fast; the
real MXNet runs in test_mxnet_perf.py): the profiler is configured when the program imports mxnet,
dumped at exit before MXNet's own shutdown, oneDNN's C-level stdout goes to the verbose log while the
program's prints still reach its stdout, and SIGTERM still dumps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from helpers.mxnet_standin import setup, sidecar

from flamegraph.frameworks.mxnet.drain import STILL_OPEN
from flamegraph.frameworks.mxnet.inprocess import bulk_settings, environment_to_set


def test_profiler_and_verbose_log_through_the_hook(tmp_path: Path) -> None:
    argv, env, directory = setup(tmp_path)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "the program's own line\n"  # the verbose line did not reach stdout
    facts = sidecar(directory)
    pid = facts["pid"]
    verbose = (directory / f"dnnl-verbose-{pid}.log").read_text()
    assert verbose.startswith("dnnl_verbose,1.5,exec,cpu,eltwise")
    assert json.loads((directory / f"profile-{pid}.json").read_text())["traceEvents"][-1]["name"] == "FullyConnected"
    assert (tmp_path / "log.txt").read_text().splitlines() == [
        "set_config aggregate_stats=False continuous_dump=True dump_period=1.0 profile_api=False "
        "profile_imperative=True profile_memory=False profile_symbolic=True",
        "trace to a pipe by fd",
        "state run",
        "waitall",
        "state stop",
        "dump",
        "mxnet shutdown",  # ours ran first
    ]
    assert facts["mxnet"] == "0.0-standin" and facts["clock_end"] and facts["dump_seconds"] is not None
    assert facts["environment"] == {
        "DNNL_VERBOSE": "1", "DNNL_VERBOSE_TIMESTAMP": "1",
        "MXNET_EXEC_BULK_EXEC_TRAIN": "0", "MXNET_EXEC_BULK_EXEC_INFERENCE": "0",
        "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD": "0", "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD": "0",
        "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN": None,
    }  # fmt: skip
    assert not list(tmp_path.glob("profile*.json")), "nothing written to the program's working directory"
    threads = facts["threads"]
    assert isinstance(threads, dict) and threads["problem"] is None
    assert [pid] in threads["map"].values() and pid in threads["python"]  # the main thread's TID is the pid


def test_the_verbose_log_goes_through_a_pipe_and_is_complete_at_exit(tmp_path: Path) -> None:
    """fd 1 is a pipe emptied by a forked drainer (no journalled ext4 append per primitive execution on the
    engine thread): every line is in the log, in order, once the process has exited, and the drainer is gone."""
    argv, env, directory = setup(tmp_path)
    lines = 30_000  # ~2.7 MB: more than the pipe holds, so the writer outruns the drainer's polls
    proc = subprocess.run(argv, env={**env, "STANDIN_LINES": str(lines)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "the program's own line\n"
    facts = sidecar(directory)
    log = (directory / f"dnnl-verbose-{facts['pid']}.log").read_text().splitlines()
    assert len(log) == lines + 1 and log[-1].startswith(f"dnnl_verbose,{lines - 1}.0,exec,")
    assert [int(line.split(",")[1].split(".")[0]) for line in log[1:]] == list(range(lines))
    drainer = facts["verbose_drain"]
    assert isinstance(drainer, int) and drainer not in (0, facts["pid"])
    assert not Path(f"/proc/{drainer}").exists() or "Z" in Path(f"/proc/{drainer}/stat").read_text().split()[2]
    assert facts["notes"] == []


def trace_events(directory: Path, pid: object) -> list[tuple[str, str, int]]:
    """(name, ph, ts) of every event object in the trace file, complete or not (as profile.py reads it)."""
    from flamegraph.frameworks.mxnet.events import FLAT_OBJECT

    found = []
    for match in FLAT_OBJECT.finditer((directory / f"profile-{pid}.json").read_text()):
        event = json.loads(match.group())
        if event.get("ph") in ("B", "E"):
            found.append((event["name"], event["ph"], event["ts"]))
    return found


def gone(pid: int, timeout: float = 10.0) -> bool:
    """The process `pid` has ended (or is a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]:
                return True
        except OSError:
            return True
        time.sleep(0.02)
    return False


def test_the_trace_goes_through_a_pipe_and_is_complete_at_exit(tmp_path: Path) -> None:
    """MXNet writes its trace to /proc/self/fd/N, a pipe emptied into the trace's file by a forked drainer:
    no regular file on MXNet's dump thread (no ext4 write per dump), every event in the file, in order,
    once the process has exited (more events than the pipe holds), and the drainer is gone."""
    argv, env, directory = setup(tmp_path)
    spans = 8_000  # ~2.6 MB of pretty-printed events: more than the 1 MB pipe
    proc = subprocess.run(argv, env={**env, "STANDIN_SPANS": str(spans)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    facts = sidecar(directory)
    drainer = facts["trace_drain"]
    assert isinstance(drainer, int) and drainer not in (0, facts["pid"], facts["verbose_drain"])
    assert facts["trace_written_as"] == f"/proc/self/fd/{facts['trace_written_as'].rsplit('/', 1)[1]}"
    assert "trace to a pipe by fd" in (tmp_path / "log.txt").read_text().splitlines()
    events = trace_events(directory, facts["pid"])
    expected = [("dot", ph, 100 + 2 * i + (ph == "E")) for i in range(spans) for ph in "BE"]
    assert events == [*expected, ("FullyConnected", "B", 10), ("FullyConnected", "E", 20)]
    trace = json.loads((directory / f"profile-{facts['pid']}.json").read_text())  # closed: valid JSON
    assert trace["displayTimeUnit"] == "ms"
    assert gone(drainer, timeout=0.5), "the drainer had finished when the process ended"
    assert facts["notes"] == []


def test_a_forked_child_does_not_hold_the_trace_open(tmp_path: Path) -> None:
    """A child the program forks (a data loader's worker) that outlives it does not hold our end of the
    trace's pipe: the drainer has written the whole trace and ended when the program has."""
    argv, env, directory = setup(tmp_path)
    env = {**env, "STANDIN_SPANS": "400", "STANDIN_CHILD": "20"}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        proc.wait(timeout=15)  # the child keeps the verbose log's stdout: do not wait for its end of a pipe
        facts = sidecar(directory)
        assert facts["notes"] == [STILL_OPEN]  # the verbose log's stdout, inherited on purpose
        assert gone(facts["trace_drain"], timeout=0.5), "the trace's drainer ended with the program"
        assert len(trace_events(directory, facts["pid"])) == 2 * 400 + 2
    finally:
        for child in (int(pid) for pid in os.listdir("/proc") if pid.isdigit()):
            try:
                stat_fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if f"{directory}" in Path(f"/proc/{child}/cmdline").read_text() and "Z" not in stat_fields[0]:
                os.kill(child, signal.SIGKILL)  # the stand-in's sleeping worker (and the log's drainer it keeps)


def test_the_trace_by_name_when_asked(tmp_path: Path) -> None:
    """FLAMEGRAPH_MXNET_TRACE=file (benches; also the way where /proc/self/fd is missing): MXNet writes its
    file itself, by name, as before the pipe, and no drainer is started for it."""
    argv, env, directory = setup(tmp_path)
    env = {**env, "STANDIN_SPANS": "400", "FLAMEGRAPH_MXNET_TRACE": "file"}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    facts = sidecar(directory)
    assert facts["trace_drain"] is None and facts["trace_written_as"] == facts["profile"]
    assert "trace to no pipe" in (tmp_path / "log.txt").read_text().splitlines()
    assert len(trace_events(directory, facts["pid"])) == 2 * 400 + 2


def test_a_killed_trainer_leaves_the_trace_it_dumped(tmp_path: Path) -> None:
    """SIGKILL: no exit handler runs, but the kernel closes the pipe: the drainer writes every event the
    dumps put in the pipe and ends."""
    argv, env, directory = setup(tmp_path)
    spans = 8_000
    proc = subprocess.Popen([*argv, "wait"], env={**env, "STANDIN_SPANS": str(spans)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 30
        while proc.stdout.readline().strip() != "READY":
            assert time.monotonic() < deadline and proc.poll() is None
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    facts = sidecar(directory)  # written when the profiler started
    assert facts["clock_end"] is None and isinstance(facts["trace_drain"], int)
    assert gone(facts["trace_drain"]), "the drainer ends once the killed process's end of the pipe is closed"
    events = trace_events(directory, facts["pid"])
    assert events == [("dot", ph, 100 + 2 * i + (ph == "E")) for i in range(spans) for ph in "BE"]


def test_sigterm_still_dumps(tmp_path: Path) -> None:
    argv, env, directory = setup(tmp_path)
    proc = subprocess.Popen([*argv, "wait"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 30
        while proc.stdout.readline().strip() != "READY":
            assert time.monotonic() < deadline and proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM
    assert "dump" in (tmp_path / "log.txt").read_text().splitlines()
    assert sidecar(directory)["clock_end"]


def test_a_program_without_mxnet_leaves_a_note(tmp_path: Path) -> None:
    argv, env, directory = setup(tmp_path)
    (tmp_path / "train.py").write_text("print('no mxnet here')\n")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "no mxnet here\n"
    facts = sidecar(directory)
    assert facts["notes"] == ["the program never imported mxnet"] and facts["mxnet"] is None


def test_bulk_is_off_unless_the_user_set_it() -> None:
    """Gluon's CachedOp bulks by MAX_NODE_TRAIN_FWD/_BWD (defaulting to MAX_NODE_TRAIN), not by
    MXNET_EXEC_BULK_EXEC_TRAIN: all four are set to 0, and a user's own setting of any of them is kept."""
    ours = environment_to_set(set())
    assert {name: ours[name] for name in ours if "BULK" in name} == {
        "MXNET_EXEC_BULK_EXEC_TRAIN": "0", "MXNET_EXEC_BULK_EXEC_INFERENCE": "0",
        "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD": "0", "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD": "0",
    }  # fmt: skip
    kept = environment_to_set({"MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN"})
    assert not {"MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD", "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD"} & set(kept)
    assert "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD" in environment_to_set({"MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD"})
    assert bulk_settings({**ours, "DNNL_VERBOSE": "1"}) == {}
    assert bulk_settings({**ours, "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN": "15"}) == {
        "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN": "15"
    }


def test_the_files_stop_at_their_caps(tmp_path: Path) -> None:
    """With caps (record --mxnet streamed), the log never passes its cap, even written faster than the watch
    polls (the drainer drops the rest); the watch stops both instruments (the profiler dumped whole: valid
    JSON), says when in the sidecar, and no second dump is asked at exit."""
    argv, env, directory = setup(tmp_path)
    cap = 300_000
    env = {**env, "STANDIN_LINES": "60000", "FLAMEGRAPH_MXNET_CAPS": f"50000000,{cap}"}  # ~5.4 MB of lines
    program = tmp_path / "train.py"
    program.write_text(program.read_text() + "time.sleep(1.5)\n")  # the watch's polls come while the program runs
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    facts = sidecar(directory)
    assert facts["caps"] == {"trace": 50_000_000, "verbose": cap}
    capped = facts["capped"]
    assert isinstance(capped, dict) and capped["file"] == "oneDNN's verbose log" and capped["cap"] == cap
    assert (directory / f"dnnl-verbose-{facts['pid']}.log").stat().st_size == cap  # cut by the drainer
    trace = json.loads((directory / f"profile-{facts['pid']}.json").read_text())
    assert trace["traceEvents"][-1]["name"] == "FullyConnected"
    # stopped and dumped at the cap; nothing asked of the profiler at exit (a second dump is refused by MXNet)
    assert (tmp_path / "log.txt").read_text().splitlines()[2:] == ["state run", "state stop", "dump", "mxnet shutdown"]
    assert facts["notes"] == []
