"""`flamegraph record --mxnet`, nothing else set, on three user scripts the test writes itself (a
hybridized Gluon CNN with BatchNorm, the same CNN not hybridized, a Module API MLP), each trained for a
few seconds on random data beside two CPU hogs (`python -c 'while True: pass'`), and the hybridized one quietly too.

The goal (issue 19): >= 95 % of engine-thread samples under a named operator, no placeholder
(`[op] (none)`, the engine's `ImperativeBulk`, an unmapped thread) above 3 %, and every operator above
5 % within 3 points of the profiler's on-CPU time (plus the sampling error of its share: see the last
assertion). A hybridized block used to put ~94 % of its engine weight under one `[op] ImperativeBulk`:
Gluon's CachedOp bulks by MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD/_BWD, which the two variables
`--mxnet` set before (..._TRAIN, ..._INFERENCE) do not cover."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.mlp import mlp_script

pytestmark = [pytest.mark.perf, pytest.mark.mxnet, pytest.mark.slow]

TRAIN_S = 2.5  # seconds of training per script
# 499 Hz gives ~200-550 engine-thread samples in 2.5 s on 2 busy cores: one standard error of a 20 %
# share is then 1.7-2.7 points, as large as the goal's 3; 1999 Hz halves it.
FREQ = "1999"

CNN = textwrap.dedent(
    """
    import sys, time
    import numpy as np, mxnet as mx
    from mxnet import autograd, gluon
    rng = np.random.RandomState(0)
    X = mx.nd.array(rng.rand(32, 1, 28, 28).astype("float32"))
    y = mx.nd.array(rng.randint(0, 10, 32).astype("float32"))
    net = gluon.nn.HybridSequential()
    net.add(
        gluon.nn.Conv2D(8, 3), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"), gluon.nn.MaxPool2D(2),
        gluon.nn.Conv2D(16, 3), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"), gluon.nn.MaxPool2D(2),
        gluon.nn.Flatten(), gluon.nn.Dense(64, activation="relu"), gluon.nn.Dense(10),
    )
    net.initialize(mx.init.Xavier())
    if sys.argv[1] == "hybrid":
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9})
    end, steps = time.monotonic() + float(sys.argv[2]), 0
    while time.monotonic() < end:
        with autograd.record():
            loss = loss_fn(net(X), y)
        loss.backward()
        trainer.step(32)
        loss.wait_to_read()
        steps += 1
    print("trained", steps, flush=True)
    """
)

MODULE = mlp_script(
    6400,
    """
    end, steps = time.monotonic() + float(sys.argv[1]), 0
    while time.monotonic() < end:
        train.reset()
        for batch in train:
            mod.forward_backward(batch); mod.update(); steps += 1
            if time.monotonic() >= end:
                break
        mx.nd.waitall()
    print("trained", steps, flush=True)
    """,
    imports="sys, time",
    init="mx.init.Xavier()",
)

CNN_OPERATORS = {
    "Convolution", "_backward_Convolution", "BatchNorm", "_backward_BatchNorm", "Pooling", "_backward_Pooling",
    "FullyConnected", "_backward_FullyConnected", "Activation", "_backward_Activation",
}  # fmt: skip
SCRIPTS = {
    "gluon-hybridized": ("cnn.py", CNN, ["hybrid"], CNN_OPERATORS),
    "gluon-imperative": ("cnn.py", CNN, ["imperative"], CNN_OPERATORS),
    "module-api": ("mlp.py", MODULE, [], {"FullyConnected", "_backward_FullyConnected", "Activation"}),
}
COVERAGE = re.compile(r"mxnet: ([0-9.]+) % of ([0-9,]+) engine-thread samples under an \[op\] frame")
GAP = re.compile(r"mxnet: agreement: largest gap ([0-9.]+) points \((.+): ([0-9.]+) % of samples, .*")
ROW = re.compile(r"^\s+[0-9,]+\s+([0-9.]+)%\s.*?\s{2}(\[(?:op|segment)\] .+)$")


class Load:
    """`loaded`: two CPU hogs while the script trains. They stop once it prints `trained`: the folding
    and the report after that read the recording only, and were slowed by the hogs for no check."""

    def __init__(self, name: str) -> None:
        self.name = name
        count = 2 if name == "loaded" else 0
        self.hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]

    def stop(self) -> None:
        for hog in self.hogs:
            hog.kill()
            hog.wait()
        self.hogs = []


@pytest.fixture
def load(request: pytest.FixtureRequest) -> Iterator[Load]:
    load = Load(request.param)
    try:
        yield load
    finally:
        load.stop()


# Every script beside the hogs, the harder case; quietly only the one bulking used to hide (the same code
# path: the three quiet runs took 40 s of the suite and never failed where a loaded one passed).
CASES = [("gluon-hybridized", "quiet"), *((script, "loaded") for script in SCRIPTS)]


@pytest.mark.parametrize(("script", "load"), CASES, indirect=["load"])
def test_user_script_operators_are_named(script: str, load: Load, tmp_path: Path) -> None:
    name, text, args, expected = SCRIPTS[script]
    (tmp_path / name).write_text(text)
    argv = [
        sys.executable, "-m", "flamegraph", "record", "--mxnet", "-F", FREQ, "--perf-data", str(tmp_path / "perf.data"),
        "--folded", str(tmp_path / "out.folded"), "-o", str(tmp_path / "out.svg"),
        "--", sys.executable, str(tmp_path / name), *args, str(TRAIN_S),
    ]  # fmt: skip
    with open(tmp_path / "stderr.txt", "w+") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=tmp_path)
        timer = threading.Timer(300, proc.kill)  # as subprocess.run's timeout did
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:  # the script's own output, passed through by `record`
                if line.startswith("trained "):
                    load.stop()
            returncode = proc.wait()
        finally:
            timer.cancel()
        stderr.seek(0)
        err = stderr.read()
    assert returncode == 0, err[-3000:]
    assert "bulk execution off for the run" in err  # the one line saying so
    coverage, gap = COVERAGE.search(err), GAP.search(err)
    assert coverage is not None and gap is not None, err[-3000:]
    rows = {m.group(2): float(m.group(1)) for line in err.splitlines() if (m := ROW.match(line))}
    placeholders = {frame: share for frame, share in rows.items() if frame.partition("] ")[2].startswith("(")}
    figures = f"{script} {load.name}: {coverage.group(0)}; {gap.group(0)}; placeholders {placeholders}"
    print(f"\n{figures}")
    assert "ImperativeBulk" not in err.partition("MXNet operators (")[2], figures
    assert {f"[op] {op}" for op in expected} <= set(rows), (figures, sorted(rows))
    assert any(frame.startswith("[op] ") and "sgd" in frame for frame in rows), sorted(rows)  # the optimizer
    assert float(coverage.group(1)) >= 95.0, figures
    assert all(share <= 3.0 for share in placeholders.values()), figures
    # The goal is 3 points; a sample share also carries the sampling error of its engine-thread samples
    # (binomial: one standard error of a 20 % share of 1,500 samples is 1.0 point), which is not the join's.
    # So the bound is 3 points plus 3.3 standard errors (a chance failure of ~1 in 1,000 per operator):
    # a join that misnames an operator's samples moves them by far more.
    engine, share = int(coverage.group(2).replace(",", "")), float(gap.group(3)) / 100
    allowed = 3.0 + 3.3 * 100 * math.sqrt(share * (1 - share) / engine)
    assert float(gap.group(1)) <= allowed, (figures, f"allowed {allowed:.1f} points")
