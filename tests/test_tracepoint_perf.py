"""Tracepoints with real perf: `fold perf.data` keeps their frames (software, tracepoint, uprobe, two
events in one file, a piped recording), and `record -e TRACEPOINT` counts every event.

perf script's default fields for a tracepoint name its frames only while no `-F` is given for the
tracepoint type; the `-F -period` fold asks for (it counts samples) used to drop them all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.programs import compile_c, need_perf

from flamegraph.folding.perf import FoldOptions
from flamegraph.folding.stage import fold_perf
from flamegraph.io.diagnostics import Diagnostics, NoSamples
from flamegraph.io.perf_header import PERF_TYPE_TRACEPOINT, read_event_attrs

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # proven beside two busy loops

WRITES = 300
# Exactly `argv[1]` writes, each from emit <- loop <- main (frame pointers), and a 1 ms nap per 10.
PROGRAM = r"""
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
static int out;
__attribute__((noinline)) void emit(int k) { if (write(out, "x", 1) != 1) exit(1); if (k % 10 == 0) usleep(1000); }
__attribute__((noinline)) void loop(int n) { for (int k = 0; k < n; k++) emit(k); }
int main(int argc, char **argv) { out = open("/dev/null", O_WRONLY); loop(atoi(argv[1])); return 0; }
"""
WRITE = "syscalls:sys_enter_write"


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield compile_c(tmp_path_factory.mktemp("tracepoints"), "wr", PROGRAM, "-fno-omit-frame-pointer")


def record(program: Path, name: str, *args: str, pipe: bool = False) -> Path:
    data = program.with_name(f"{name}.data")
    command = [need_perf(), "record", "-q", *args, "-o", "-" if pipe else str(data), str(program), str(WRITES)]
    with data.open("wb") as out:
        done = subprocess.run(command, stdout=out if pipe else subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=120)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"perf record {' '.join(args)} failed here: {done.stderr.decode()[-200:]}")
    return data


def plain_text(data: Path) -> Path:
    """What a user pastes: plain `perf script` (no -F), as fold runs it otherwise."""
    text = data.with_suffix(".txt")
    with text.open("wb") as out:
        subprocess.run([need_perf(), "script", "-i", str(data), "--no-inline", "--max-stack", "4096"], stdout=out,
                       stderr=subprocess.DEVNULL, check=True, timeout=120)  # fmt: skip
    return text


def fold(path: Path, event: str | None = None) -> dict[str, int]:
    diagnostics = Diagnostics(echo=False)
    options = FoldOptions(event_filter=event)
    counts = fold_perf([str(path)], options, diagnostics, jobs=1).profile.counts
    assert diagnostics.skipped_records == 0, diagnostics.summary()
    return dict(counts)


def writes(counts: dict[str, int]) -> int:
    return sum(count for stack, count in counts.items() if stack.startswith("wr;"))


@pytest.mark.parametrize("pipe", [False, True], ids=["file", "piped"])
def test_a_tracepoint_recording_folds_with_its_frames(program: Path, pipe: bool) -> None:
    data = record(program, f"write-{pipe}", "-e", WRITE, "-g", pipe=pipe)
    assert any(attr.type == PERF_TYPE_TRACEPOINT for attr in read_event_attrs(str(data)))
    folded = fold(data)
    assert writes(folded) == WRITES  # one sample per event: counted, not weighed
    assert any(";main;loop;" in stack for stack in folded), folded
    assert folded == fold(plain_text(data))


def test_two_events_in_one_file_fold_each_with_its_frames(program: Path) -> None:
    data = record(program, "two", "-e", "cpu-clock", "-e", WRITE, "-g")
    text = plain_text(data)
    tracepoint = fold(data, WRITE)
    assert writes(tracepoint) == WRITES and any(";main;loop;" in stack for stack in tracepoint), tracepoint
    assert tracepoint == fold(text, WRITE)
    # cpu-clock: the same stacks as in the text, in samples (the text weighs each its period)
    clock = fold(data, "cpu-clock")
    assert set(clock) == set(fold(text, "cpu-clock"))


def test_sched_switch_recording_folds_with_its_frames(program: Path) -> None:
    data = record(program, "switch", "-e", "sched:sched_switch", "-g")
    folded = fold(data)
    assert any(";main;loop;" in stack and "schedule" in stack for stack in folded), folded
    assert folded == fold(plain_text(data))


def test_a_tracepoint_without_call_chains_folds_as_plain_perf_script(program: Path) -> None:
    """No -g: perf prints no frame for a tracepoint, and fold must not ask for one (one on the header line)."""
    data = record(program, "flat", "-e", WRITE)
    folded = fold(data)
    assert folded == fold(plain_text(data)) == {"wr": WRITES}


def test_record_counts_every_event_of_a_tracepoint(program: Path, tmp_path: Path) -> None:
    """The default --freq 499 made perf sample a tracepoint's events (253 of 1,000 writes kept)."""
    out = tmp_path / "wr.folded"
    command = [sys.executable, "-m", "flamegraph", "record", "-e", WRITE, "--no-svg", "--folded", str(out), "--",
               str(program), str(WRITES)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert writes(read_counts(out)) == WRITES
    assert facts(out)["frequency"] == "every event"
    # An explicit --freq is the user's: perf samples at it.
    command[command.index("-e") : command.index("-e")] = ["--freq", "99"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and facts(out)["frequency"] == "99 Hz", done.stderr


def read_counts(folded: Path) -> dict[str, int]:
    return {stack: int(count) for stack, count in (line.rsplit(" ", 1) for line in folded.read_text().splitlines())}


def facts(folded: Path) -> dict[str, str]:
    metadata: dict[str, str] = json.loads(folded.with_name(folded.name + ".json").read_text())["metadata"]
    return metadata


def test_offcpu_text_without_switch_records_says_what_to_print(program: Path) -> None:
    """Plain `perf script` of a sched_switch recording of one program hides the switch-ins (a
    PERF_RECORD_SWITCH IN; the sched_switch record naming the thread as next_pid belongs to the task
    switching out, not traced): the fold lost most of the time with 'switched out twice' warnings only."""
    from flamegraph.folding.offcpu import fold_offcpu

    data = record(program, "offcpu", "-e", "sched:sched_switch", "--switch-events", "-g")
    folded = {}
    for args in ([], ["--show-switch-events"]):
        text = data.with_name(f"offcpu{len(args)}.txt")
        with text.open("wb") as out:
            subprocess.run([need_perf(), "script", "-i", str(data), *args], stdout=out, stderr=subprocess.DEVNULL,
                           check=True, timeout=120)  # fmt: skip
        diagnostics = Diagnostics(echo=False)
        try:
            profile = fold_offcpu([str(text)], diagnostics=diagnostics)
        except NoSamples as err:  # one thread: every switch-out but the last unpaired, that one open at the end
            folded[bool(args)] = (0, [*diagnostics.notes, str(err)])
        else:
            folded[bool(args)] = (sum(profile.counts.values()), diagnostics.notes)
    (plain, notes), (shown, shown_notes) = folded[False], folded[True]
    assert any("print it with `perf script --show-switch-events`" in note for note in notes), notes
    assert not any("--show-switch-events" in note for note in shown_notes), shown_notes
    assert shown >= 30_000 > plain  # µs: the 30 naps of 1 ms are there only with the switch records


# A thread naps 20 ms (its switch-in, from the idle task, is not recorded without --switch-events), spins
# ~100 ms (wall clock) and exits; main joins it, then naps 40 x 10 ms (switch-outs recorded till the end).
NAP_SPIN_EXIT = r"""
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static volatile double sink;
__attribute__((noinline)) void nap(void) { usleep(20000); }
static void *worker(void *arg) {
    nap();
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do { for (int i = 0; i < 10000; i++) sink += i; clock_gettime(CLOCK_MONOTONIC, &t); }
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000000L);
    return arg;
}
int main(void) {
    pthread_t w;
    pthread_create(&w, 0, worker, 0);
    pthread_join(w, 0);
    for (int i = 0; i < 40; i++) usleep(10000);
    return 0;
}
"""


def test_offcpu_without_switch_records_invents_no_wait_to_the_end(tmp_path: Path) -> None:
    """newcomer10 a-F18: `perf record -e sched:sched_switch -g` without --switch-events; plain `perf script`
    of it (no task events either) drew the worker's last switch-out as a wait until the recording
    stopped, its switch-in and its exit unseen: longer than the worker lived (~120 ms)."""
    from flamegraph.folding.offcpu import fold_offcpu

    program = compile_c(tmp_path, "napper", NAP_SPIN_EXIT, "-pthread", "-fno-omit-frame-pointer")
    data = tmp_path / "ss.data"
    done = subprocess.run([need_perf(), "record", "-q", "-e", "sched:sched_switch", "-g", "-o", str(data),
                           str(program)], capture_output=True, timeout=120)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"perf record failed here: {done.stderr.decode()[-200:]}")
    text = tmp_path / "ss.txt"
    with text.open("wb") as out:
        subprocess.run([need_perf(), "script", "-i", str(data)], stdout=out, stderr=subprocess.DEVNULL, check=True,
                       timeout=120)  # fmt: skip
    worker = {}
    for source in (data, text):
        diagnostics = Diagnostics(echo=False)
        try:
            counts = fold_offcpu([str(source)], diagnostics=diagnostics).counts
        except NoSamples:
            counts = {}
        worker[source.suffix] = sum(us for stack, us in counts.items() if ";worker;" in stack)
    assert worker[".txt"] <= 200_000 and worker[".data"] <= 200_000, worker  # µs: main naps 400 ms after it
