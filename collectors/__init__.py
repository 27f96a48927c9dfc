"""Workloads to profile and their recipes: real MNIST set-up, the MXNet MLP, the `make` drivers.

`collectors` may import mxnet and `flamegraph`; `flamegraph` never imports `collectors`.
"""
