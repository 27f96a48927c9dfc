"""Frameworks inside the profiled program: oneDNN's JIT kernels (jit/), MXNet's operators (mxnet/), the
in-process launcher both use.
"""
