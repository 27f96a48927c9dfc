"""flamegraph: perf recordings -> folded stacks -> interactive SVG flame graphs.

The stages, each callable alone:
    fold_perf(inputs, FoldOptions(...)) -> FoldResult   # perf script text / perf.data -> folded
    read_folded / write_folded                           # the folded text contract

The names are imported on first use (flamegraph.lazy): every command starts with this package,
and `flamegraph --help` or `flamegraph render` must not pay for the folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .folding.perf import FoldOptions, PerfCollapser
    from .folding.stage import FoldResult, fold_perf
    from .io.diagnostics import Diagnostics, FlamegraphError
    from .io.folded import read_folded, write_folded
    from .model import FoldedProfile

__getattr__ = lazy_exports(
    __name__,
    {
        "Diagnostics": ".io.diagnostics",
        "FlamegraphError": ".io.diagnostics",
        "FoldOptions": ".folding.perf",
        "FoldResult": ".folding.stage",
        "FoldedProfile": ".model",
        "PerfCollapser": ".folding.perf",
        "fold_perf": ".folding.stage",
        "read_folded": ".io.folded",
        "write_folded": ".io.folded",
    },
)

__all__ = [
    "Diagnostics",
    "FlamegraphError",
    "FoldOptions",
    "FoldResult",
    "FoldedProfile",
    "PerfCollapser",
    "fold_perf",
    "read_folded",
    "write_folded",
]
