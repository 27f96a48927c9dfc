"""Recording with `perf record`: build the command line, run it with progress, stop it cleanly, fold it.

Generic over the event, so on-CPU (`cpu-clock`), off-CPU (`sched:sched_switch`) and JIT-aware
recordings share it. The API, top to bottom:

    spec = RecordSpec(command=("python", "train.py"))                 # what: launch a command, or
    how = RecordOptions(event="sched:sched_switch", freq=None,         # how (the defaults: cpu-clock,
                        call_graph="dwarf,8192", extra_args=("--switch-events",), duration=3.0)  # 499 Hz, dwarf)
    spec = RecordSpec(pid=1234, options=how)                          # attach to a pid
    record_command(spec, perf, output) -> list[str]       # the `perf record` argv (pure)
    record(spec, output, hooks=(), on_output=None, status=None) -> Recording
        # runs perf with a progress line; Ctrl-C (or spec.options.duration) stops perf and keeps the data;
        # raises PerfMissing / NotPermitted / NoSuchProcess / CommandNotFound / PerfFailed
    capture_metadata(spec, perf) -> dict[str, str]          # command, event, perf version, kernel...
    script_args(recording, window, fields) -> list[str]     # `perf script` options (-F, --time S,E)
    fold_recording(recording, options, window, diagnostics, status) -> FoldedProfile   # on-CPU

Pre- and post-steps plug in as hooks (e.g. JIT naming: DNNL_JIT_DUMP=1, a scratch cwd and a
python wrapper before; `perf inject --jit` after):

    class RecordHook(Protocol):
        def prepare(self, spec: RecordSpec) -> RecordSpec     # env, cwd, command wrapper, call graph
        def finish(self, recording: Recording) -> Recording   # e.g. swap in an injected perf.data

Modules: spec (options -> argv, checks, errors, metadata), command (the user's program, their PATH and
environment), run (perf record itself), lost and scope (what the recording misses, said in one line),
script (perf script -> folded), status (the progress line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .run import record
    from .script import fold_recording, script_args, show_progress
    from .spec import (
        DEFAULT_CALL_GRAPH,
        DEFAULT_EVENT,
        DEFAULT_FREQ,
        DEFAULT_MMAP,
        ONCPU_FIELDS,
        RecordHook,
        Recording,
        RecordOptions,
        RecordSpec,
        capture_metadata,
        check_target,
        explain_failure,
        parse_call_graph,
        record_command,
    )
    from .status import Status

# Imported on first use (flamegraph.lazy): the CLI reads the defaults in .spec without the folder in .script.
__getattr__ = lazy_exports(
    __name__,
    {
        "DEFAULT_CALL_GRAPH": ".spec",
        "DEFAULT_EVENT": ".spec",
        "DEFAULT_FREQ": ".spec",
        "DEFAULT_MMAP": ".spec",
        "ONCPU_FIELDS": ".spec",
        "RecordHook": ".spec",
        "RecordOptions": ".spec",
        "RecordSpec": ".spec",
        "Recording": ".spec",
        "Status": ".status",
        "capture_metadata": ".spec",
        "check_target": ".spec",
        "explain_failure": ".spec",
        "fold_recording": ".script",
        "show_progress": ".script",
        "parse_call_graph": ".spec",
        "record": ".run",
        "record_command": ".spec",
        "script_args": ".script",
    },
)

__all__ = [
    "DEFAULT_CALL_GRAPH",
    "DEFAULT_EVENT",
    "DEFAULT_FREQ",
    "DEFAULT_MMAP",
    "ONCPU_FIELDS",
    "RecordHook",
    "RecordOptions",
    "RecordSpec",
    "Recording",
    "Status",
    "capture_metadata",
    "check_target",
    "explain_failure",
    "fold_recording",
    "parse_call_graph",
    "record",
    "record_command",
    "script_args",
    "show_progress",
]
