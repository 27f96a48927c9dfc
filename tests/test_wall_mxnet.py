"""`flamegraph record --wall` on a real MXNet MLP under real perf: each thread's tower is its wall time,
what it ran (warm) beside what it waited for (cold), and the figures are the kernel's.

The workload trains the 784-128-64-10 MLP on 50 batches of synthetic data twice (no data set needed),
reading each thread's CPU time and run delay from /proc/self/task/TID/schedstat at the end and leaving
with os._exit, so nothing runs after the read. The known answers:
- per thread, the on-CPU time in the graph is the kernel's CPU time of that thread;
- per thread, ran + waited is its life: the window for the main thread (which lives all of it);
- the main thread's WaitForVar is a wait (cold), the engine worker's time on-CPU is operator time (warm).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mlp import mlp_script

from flamegraph.analysis.offcpu_threads import is_state, thread_roles
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.io.folded import read_folded

pytestmark = [pytest.mark.perf, pytest.mark.mxnet, pytest.mark.slow]

MLP = mlp_script(
    3200,
    """
    metric = mx.metric.Accuracy()
    for epoch in range(2):
        train.reset()
        for batch in train:  # update_metric copies the outputs to numpy: the main thread waits in WaitForVar
            mod.forward_backward(batch); mod.update(); mod.update_metric(metric, batch.label)
    mx.nd.waitall()
    lines = []
    for tid in sorted(os.listdir("/proc/self/task"), key=int):
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            ran, delay, _ = f.read().split()
        lines.append(f"SCHEDSTAT {tid} {ran} {delay}")
    print("\\n".join(lines), flush=True)
    os._exit(0)  # no interpreter or engine teardown after the read
    """,
    imports="os",
)
THREAD = re.compile(
    r"^(\S+-(\d+)): ran (\S+) (µs|ms|s), waited (\S+) (µs|ms|s), wall \S+ \S+ of the (\S+) (µs|ms|s) window$"
)
# libmxnet.so+0x...: MXNet's code without a symbol, in stacks the 8 KB copy cut (on an AVX-512 machine a third of
# the worker's samples, where the machine the test was written on named them)
OPERATOR = re.compile(r"ExecuteOprBlock|mxnet::op::|;\[perf-\d+\.map\]|libmxnet\.so\+0x")
SCALE = {"µs": 1.0, "ms": 1e3, "s": 1e6}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp = tmp_path_factory.mktemp("mxnet-wall")
    (tmp / "mlp.py").write_text(MLP)
    argv = [sys.executable, "-m", "flamegraph", "record", "--wall", "--folded", str(tmp / "wall.folded"),
            "-o", str(tmp / "wall.svg"), "--", sys.executable, str(tmp / "mlp.py")]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, tmp


def per_thread(counts: dict[str, float]) -> dict[str, dict[str, float]]:
    """comm-tid -> µs it ran, was preempted ([R]) and otherwise waited, from the folded stacks."""
    found: dict[str, dict[str, float]] = {}
    for stack, us in counts.items():
        frames = stack.split(";")
        kind = ("R" if frames[-1] == "[R]" else "waited") if is_state(frames[-1]) else "ran"
        thread = found.setdefault(frames[0], {"ran": 0.0, "R": 0.0, "waited": 0.0})
        thread[kind] += us
    return found


def test_each_threads_tower_is_its_wall_time_and_the_kernels_figures(
    recorded: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, tmp = recorded
    with open(tmp / "wall.folded", "rb") as lines:
        counts = read_folded(lines, "wall.folded", Diagnostics(echo=False)).counts
    read = re.finditer(r"^SCHEDSTAT (\d+) (\d+) (\d+)$", proc.stdout, re.M)
    kernel = {f"python-{m[1]}": (int(m[2]) / 1e3, int(m[3]) / 1e3) for m in read}  # µs ran, µs runnable
    said = {m[1]: m for line in proc.stderr.splitlines() if (m := THREAD.match(line))}
    threads = per_thread(counts)
    roles = thread_roles(counts)
    main = next(thread for thread, role in roles.items() if role == "main")
    workers = [thread for thread, role in roles.items() if role == "engine worker" and threads[thread]["ran"] > 0]
    print(proc.stderr[-2500:], kernel, threads, sep="\n")
    assert workers and main in kernel
    for thread in (main, *workers):  # the threads that ran: what the graph says it ran is the kernel's CPU time
        assert threads[thread]["ran"] == pytest.approx(kernel[thread][0], rel=0.1, abs=10_000), thread  # seen: 0-2 %
    for thread, m in said.items():  # the terminal's line per thread is the folded file's sum
        ran, waited, window = (float(m[i]) * SCALE[m[i + 1]] for i in (3, 5, 7))
        assert ran == pytest.approx(threads[thread]["ran"], rel=0.006, abs=1)  # 3-4 digits
        assert waited == pytest.approx(threads[thread]["R"] + threads[thread]["waited"], rel=0.006, abs=1)
        assert ran + waited <= window * 1.01 + 4_000  # no thread lives longer than the window
    m = said[main]
    window = float(m[7]) * SCALE[m[8]]
    life = sum(threads[main].values())
    assert abs(life - window) <= 0.01 * window + 4_000  # the main thread lives all the window: ran + waited is it
    # The main thread's WaitForVar is a wait: cold, a stack ending in its state; the worker's CPU time is
    # operator time: under ExecuteOprBlock, an operator's frames (stacks cut short by the 8 KB DWARF copy
    # still hold them) or oneDNN's JIT kernels (perf cannot unwind out of them: `[perf-PID.map]`).
    waitforvar = {cold: sum(us for stack, us in counts.items() if stack.startswith(main + ";") and "WaitForVar" in stack
                            and is_state(stack.rpartition(";")[2]) == cold) for cold in (True, False)}  # fmt: skip
    assert waitforvar[True] >= 0.9 * (waitforvar[True] + waitforvar[False]) and waitforvar[True] > 50_000
    for worker in (w for w in workers if threads[w]["ran"] >= 20_000):  # 10+ samples: one sample may be the
        # worker's own bookkeeping between operators (seen: one 2 ms sample, no operator, in a worker that ran 69 µs)
        operator = sum(us for stack, us in counts.items() if stack.startswith(worker + ";") and
                       not is_state(stack.rpartition(";")[2]) and re.search(OPERATOR, stack))  # fmt: skip
        assert operator >= 0.9 * threads[worker]["ran"], worker  # seen: 98 %


FRAMES = """
return Array.from(document.querySelectorAll('#frames > g')).map(g => {
    const title = g.querySelector('title').textContent, rect = g.querySelector('rect');
    return [title.slice(0, title.lastIndexOf(' (')), rect.getAttribute('fill'), rect.getBoundingClientRect().width];
});
"""


@pytest.mark.browser
def test_the_page_draws_waits_cold_operators_warm_and_one_time_axis(
    recorded: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    from helpers.clients import chromium
    from helpers.page import rgb

    proc, tmp = recorded
    said = {m[1]: m for line in proc.stderr.splitlines() if (m := THREAD.match(line))}
    walls = {thread: sum(float(m[i]) * SCALE[m[i + 1]] for i in (3, 5)) for thread, m in said.items()}
    with chromium() as browser:
        browser.get((tmp / "wall.svg").as_uri())
        frames: list[tuple[str, str, float]] = browser.execute_script(FRAMES)  # (name, fill, width) of each frame

    def widest(name: str) -> tuple[str, float]:
        _, fill, width = max((f for f in frames if name in f[0]), key=lambda f: f[2])
        return fill, width

    waits, _ = widest("::WaitForVar")  # the main thread's wait: blue
    assert rgb(waits)[2] >= 205 and rgb(waits)[0] <= 140
    # an operator's frames: warm where the worker ran it, cold where it was preempted in it (on a busy
    # machine often longer than it ran): both, and nothing else
    colours = [rgb(fill) for name, fill, _ in frames if "mxnet::op::" in name]
    warm = [red >= 205 and blue <= 55 for red, _, blue in colours]
    cold = [blue >= 205 and red <= 140 for red, _, blue in colours]
    assert any(warm) and all(w or c for w, c in zip(warm, cold, strict=True))
    # one time axis: each thread's tower is as wide as its wall time (an idle thread's idle stack is left
    # out, as in offcpu: the largest of its stacks; the rest of its time is drawn)
    everything = widest("all")[1]
    towers = {name.partition(" ")[0]: width for name, _, width in frames if name.partition(" ")[0] in walls}
    with (tmp / "wall.folded").open("rb") as lines:
        counts = read_folded(lines, "wall.folded", Diagnostics(echo=False)).counts
    idle = {name.partition(" ")[0] for name, _, _ in frames if name.partition(" ")[0] in walls and "idle)" in name}
    for thread in idle:
        walls[thread] -= max(us for stack, us in counts.items() if stack.startswith(thread + ";"))
    drawn = sum(walls[thread] for thread in towers)
    assert len(towers) >= 2
    for thread, width in towers.items():
        assert width == pytest.approx(everything * walls[thread] / drawn, abs=2), thread
