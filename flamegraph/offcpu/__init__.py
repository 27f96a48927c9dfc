"""Off-CPU flame graphs: record sched_switch with stacks, pair each wait's two ends, fold to microseconds.

The pipeline behind `flamegraph offcpu` and `flamegraph fold --offcpu`:

    perf record -e sched:sched_switch --switch-events --call-graph dwarf,8192 (-p PID | -- COMMAND)
    perf script --no-inline -F comm,tid,time,event,trace,ip,sym,dso
                --show-switch-events --show-task-events --show-lost-events
    -> collapse.perf_sched (one wait per switch-out/switch-in pair) -> FoldedProfile in microseconds

`--switch-events` gives every traced thread a PERF_RECORD_SWITCH IN record, so a wait ends even
when the CPU goes idle or to another process (pairing on `next_pid` alone loses those in -p mode).
`-p` follows threads created during the recording (perf inherits the events to them).

Modules: `record` (the options, why the tracepoint cannot be recorded, `perf record`), `proc` (the
/proc snapshots that account for the threads perf saw nothing of), `fold` (perf script -> waits -> profile),
`threads` (roles, totals, idle threads and the functions that blocked, read from any off-CPU profile).
"""
