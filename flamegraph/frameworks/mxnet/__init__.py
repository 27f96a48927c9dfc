"""MXNet operators and oneDNN primitives as frames in the graph (`flamegraph record --mxnet`).

Joins three streams recorded side by side: perf's samples (time, thread, stack), MXNet's profiler
trace (operator spans per profiler thread) and oneDNN's verbose log (primitive executions):

    inprocess   in the profiled process: profiler and verbose log on, clocks read (stdlib only)
    hook        the `record` hook around it, and `MxnetHook.joiner()` -> the fold's sample hook
    profile     Chrome-trace JSON -> spans        dnnl     verbose lines -> executions
    clock       CLOCK_MONOTONIC -> CLOCK_REALTIME, residual error, the data check
    threads     profiler thread -> Linux TID, learnt from the samples, with its evidence
    join        the sample hook: [op] / [dnnl] frames inserted where they belong
    instruments the tool's own instruments marked ([instrumentation] frames), and their share
    summary     coverage, per-operator and per-primitive tables, their text
    views       group-by-op re-rooting, operator-by-operator comparison of two profiles
    switches    when each thread was off the CPU (context switches): profiler time split on/off CPU

Nothing here imports mxnet; this package's __init__ imports nothing, so the in-process hook stays light.
"""
