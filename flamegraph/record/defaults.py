"""The recording defaults that command signatures show in `--help` (record, offcpu, fleet record).

A module of its own so `flamegraph --help` reads them without importing the recorder
(flamegraph.record.spec and flamegraph.record.memory: subprocess, capabilities, tracefs).
"""

from __future__ import annotations

# Defaults measured on the MXNet MLP (see README "Recording defaults"): frame pointers give 0 % complete
# stacks on libraries built without them, DWARF ~82 %; 499 Hz keeps DWARF's overhead near 7 %.
DEFAULT_EVENT = "cpu-clock"  # software event: works in VMs without a hardware PMU
DEFAULT_FREQ = 499
DEFAULT_CALL_GRAPH = "dwarf,16384"
OFFCPU_CALL_GRAPH = "dwarf,8192"  # sched_switch: frame pointers stop at libc's futex wrappers: 1 user frame
MEMORY_MODES = ("alloc", "live")  # record --memory MODE
MEMORY_SAMPLE = 512 * 1024  # record --memory-sample: mean bytes between samples (tcmalloc's default too)
# record --memory-max-rate: samples per second per process at most (a sample costs the program ~5-8 µs
# with DWARF stacks: ~1 % of a CPU), the interval raised above --memory-sample when a program allocates faster
MEMORY_MAX_RATE = 1000
