"""The MXNet workload of the real-perf tests: a script that trains the 784-128-64-10 MLP (Module API, oneDNN)
on synthetic data (seed 0), so that no data set is needed. Each test gives the rows and its training loop."""

from __future__ import annotations

import textwrap

XAVIER_GAUSSIAN = 'mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2)'

_MODEL = """\
rng = np.random.RandomState(0)
X = rng.rand({rows}, 784).astype("float32"); y = rng.randint(0, 10, {rows}).astype("float32")
train = mx.io.NDArrayIter(X, y, 64, shuffle=True){validation}
net = mx.sym.Variable("data")
for i, hidden in enumerate((128, 64)):
    net = mx.sym.Activation(mx.sym.FullyConnected(net, name=f"fc{{i}}", num_hidden=hidden), act_type="relu")
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, name="fc2", num_hidden=10), name="softmax")
mod = mx.mod.Module(net, context=mx.cpu())
mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
mod.init_params({init})
mod.init_optimizer(optimizer="sgd", optimizer_params={{"learning_rate": 0.05, "momentum": 0.9}})
"""


def mlp_script(
    rows: int, training: str, imports: str = "", init: str = XAVIER_GAUSSIAN, validation: bool = False
) -> str:
    """The script: `imports` (say "os, sys"), numpy as np and mxnet as mx, `rows` rows of data in the iterator
    `train` (with `validation`, also `val`: its first 640 rows, unshuffled), the model bound as `mod` with its
    parameters set by `init` and SGD, then `training` (dedented), which trains `mod` as the test needs."""
    head = f"import {imports}\n" if imports else ""
    val = "; val = mx.io.NDArrayIter(X[:640], y[:640], 64)" if validation else ""
    model = _MODEL.format(rows=rows, validation=val, init=init)
    loop = textwrap.dedent(training).lstrip("\n")
    return f"\n{head}import numpy as np, mxnet as mx\n{model}{loop}"


# Three epochs of 12,800 rows (about a second each), then "trained": the real-perf MXNet tests' run.
THREE_EPOCHS = mlp_script(
    12800,
    """
    for epoch in range(3):
        train.reset()
        for batch in train:
            mod.forward_backward(batch); mod.update()
        mx.nd.waitall()
    print("trained", flush=True)
    """,
)
