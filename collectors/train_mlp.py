"""The workload: an MXNet multi-layer perceptron (784-128-64-10, ReLU, SoftmaxOutput) on real MNIST.

    python -m collectors.train_mlp [--data DIR] [--epochs 3] [--max-batches N]

Fed by `mx.io.MNISTIter`, trained with SGD through the Module API. It prints what a profiler
needs: `PID <pid>`, `TRAIN_START <t>` / `TRAIN_END <t>` as CLOCK_MONOTONIC seconds (the clock of
`perf record -k CLOCK_MONOTONIC`, so they are `perf script --time` bounds that leave out the
~3.5 s of `import mxnet`), and per epoch the accuracies and samples/s, then `EPOCH_END <t>` (each
epoch's window in the same clock: `make flamegraph` draws a graph per epoch; see `mlp_log`).
oneDNN (MKLDNN) does the math unless MXNET_MKLDNN_ENABLED=0, which selects OpenBLAS.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from .mlp_log import format_epoch, format_marker

MIN_VAL_ACC = 0.95  # one full epoch reaches 0.9599: below this the data are not real MNIST


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m collectors.train_mlp", description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, help="directory of the four IDX files (default: prepare the cache)")
    p.add_argument("--cache", type=Path, help="MNIST cache directory when --data is not given")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after N batches (0: all)")
    p.add_argument("--sleep-before", type=float, default=0.0, help="seconds to wait before training")
    p.add_argument("--min-val-acc", type=float, default=MIN_VAL_ACC,
                   help="exit 1 below this final validation accuracy (full epochs only)")  # fmt: skip
    return p.parse_args(argv)


def iterators(mx: Any, data: Path, batch_size: int) -> tuple[Any, Any]:
    def one(prefix: str, shuffle: bool) -> Any:
        return mx.io.MNISTIter(
            image=str(data / f"{prefix}-images-idx3-ubyte"),
            label=str(data / f"{prefix}-labels-idx1-ubyte"),
            data_shape=(784,), batch_size=batch_size, shuffle=shuffle, flat=True, silent=True,
        )  # fmt: skip

    return one("train", True), one("t10k", False)


def build_module(mx: Any, train: Any, lr: float) -> Any:
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=128)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=64)
    net = mx.sym.Activation(net, name="relu2", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc3", num_hidden=10)
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": lr, "momentum": 0.9, "wd": 1e-4})
    return mod


def train_epoch(mx: Any, mod: Any, train_it: Any, max_batches: int) -> tuple[Any, int]:
    """One pass over the training set (a Python 3.12+ graph shows it: train_epoch -> forward/backward)."""
    train_it.reset()
    metric = mx.metric.Accuracy()
    seen = 0
    for n, batch in enumerate(train_it):
        if max_batches and n >= max_batches:
            break
        mod.forward_backward(batch)
        mod.update()
        mod.update_metric(metric, batch.label)
        seen += batch.data[0].shape[0]
    mx.nd.waitall()
    return metric, seen


def train(mx: Any, mod: Any, train_it: Any, val_it: Any, epochs: int, max_batches: int) -> float:
    """Runs the epochs, prints one line each; returns the last validation accuracy."""
    val_acc = 0.0
    for epoch in range(epochs):
        started, cpu = time.perf_counter(), time.process_time()
        metric, seen = train_epoch(mx, mod, train_it, max_batches)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        val_acc = mod.score(val_it, mx.metric.Accuracy())[0][1]
        print(format_epoch(epoch, metric.get()[1], val_acc, elapsed, seen / elapsed), flush=True)
        # the epoch's CPU seconds, all threads (perf's stack copies are the sampled threads' system time): a
        # cost measure a loaded machine disturbs far less than samples/s
        print(format_marker("EPOCH_END", time.clock_gettime(time.CLOCK_MONOTONIC)), f"cpu {cpu:.3f}", flush=True)
    return float(val_acc)


# numpy 1.24 removed these aliases and MXNet 1.9.1 still uses them (`np.bool` at import): on Python 3.12,
# where numpy 1.26 is the oldest with wheels, the workload puts them back before importing MXNet. The
# library never touches numpy; only this program does, and only for names numpy no longer has.
NUMPY_ALIASES = {"bool": bool, "int": int, "float": float, "complex": complex, "object": object, "str": str}


def restore_numpy_aliases() -> list[str]:
    import numpy as np

    restored = [name for name in NUMPY_ALIASES if name not in np.__dict__]
    for name in restored:
        setattr(np, name, NUMPY_ALIASES[name])
    return restored


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.data is None:
        from .mnist import prepare_mnist

        args.data = prepare_mnist(args.cache)
    print(f"PID {os.getpid()}", flush=True)
    restore_numpy_aliases()
    import mxnet as mx

    mkldnn = os.environ.get("MXNET_MKLDNN_ENABLED", "1") != "0"
    print(f"backend {'oneDNN (MKLDNN)' if mkldnn else 'OpenBLAS (MXNET_MKLDNN_ENABLED=0)'}, "
          f"mxnet {mx.__version__}", flush=True)  # fmt: skip
    train_it, val_it = iterators(mx, args.data, args.batch_size)
    mod = build_module(mx, train_it, args.lr)
    if args.sleep_before:
        time.sleep(args.sleep_before)
    print(format_marker("TRAIN_START", time.clock_gettime(time.CLOCK_MONOTONIC)), flush=True)
    wall = time.perf_counter()
    signal.signal(signal.SIGTERM, _interrupt)  # perf ends its workload with SIGTERM when stopped
    try:
        val_acc = train(mx, mod, train_it, val_it, args.epochs, args.max_batches)
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # perf's SIGTERM follows the terminal's SIGINT
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(format_marker("TRAIN_END", time.clock_gettime(time.CLOCK_MONOTONIC)), "(interrupted)", flush=True)
        return 130
    print(format_marker("TRAIN_END", time.clock_gettime(time.CLOCK_MONOTONIC)), flush=True)
    print(f"total {time.perf_counter() - wall:.2f}s", flush=True)
    if not args.max_batches and args.epochs > 0 and val_acc < args.min_val_acc:
        print(f"train_mlp: validation accuracy {val_acc:.4f} is below {args.min_val_acc}: "
              "the MNIST files are not right", file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
