"""Fleet profiles on Dask: record every host of a cluster, fold each where its symbols are, merge.

    scheduler.py  --scheduler: parse it, check that a Dask scheduler answers there (timeout, greeting)
    cluster.py  connect (or start a LocalCluster), find the hosts, one task per host, watch them (Dask)
    local_worker.py  the LocalCluster workers' Dask preload: out of the terminal's process group
    tasks.py    what runs on a host: `flamegraph record`'s record() and fold, stopped on request
    watchdog.py a process apart that stops a host's perf when its worker is stopped (not dead)
    hosts.py    a host's identity, and the processes a --match pattern names there
    model.py    the request, each host's result (folded stacks + facts, or why it is missing)
    merge.py    one profile from many hosts (per-host roots), the per-host table for the header
    outlier.py  the straggler view: the host least like the others' mean
    fold.py     `flamegraph fold --scheduler`: record-aligned chunks folded on workers, tree-reduced

Only cluster.py and fold.py's cluster function import Dask, and only when called: the rest of
flamegraph imports and runs without it (`pip install flamegraph-perf[fleet]` adds it).
"""
