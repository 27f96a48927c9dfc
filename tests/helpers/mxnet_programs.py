"""MXNet programs the tests record: the 784-128-64-10 MLP `make flamegraph` trains, on synthetic data
(about a second per epoch; no data set needed)."""

from __future__ import annotations

import textwrap

MLP = textwrap.dedent(
    """
    import numpy as np, mxnet as mx
    rng = np.random.RandomState(0)
    X = rng.rand(12800, 784).astype("float32"); y = rng.randint(0, 10, 12800).astype("float32")
    train = mx.io.NDArrayIter(X, y, 64, shuffle=True)
    net = mx.sym.Variable("data")
    for i, hidden in enumerate((128, 64)):
        net = mx.sym.Activation(mx.sym.FullyConnected(net, name=f"fc{i}", num_hidden=hidden), act_type="relu")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, name="fc2", num_hidden=10), name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05, "momentum": 0.9})
    for epoch in range(3):
        train.reset()
        for batch in train:
            mod.forward_backward(batch); mod.update()
        mx.nd.waitall()
    print("trained", flush=True)
    """
)
