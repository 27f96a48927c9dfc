"""flamegraph: perf recordings -> folded stacks -> interactive SVG flame graphs.

The stages, each callable alone:
    fold_perf(inputs, FoldOptions(...)) -> FoldResult   # perf script text / perf.data -> folded
    read_folded / write_folded                           # the folded text contract
"""

from .collapse.perf import FoldOptions, PerfCollapser
from .diagnostics import Diagnostics, FlamegraphError
from .fold import FoldResult, fold_perf
from .folded import read_folded, write_folded
from .model import FoldedProfile, Rect

__all__ = [
    "Diagnostics",
    "FlamegraphError",
    "FoldOptions",
    "FoldResult",
    "FoldedProfile",
    "PerfCollapser",
    "Rect",
    "fold_perf",
    "read_folded",
    "write_folded",
]
