"""Lazy re-exports for package facades (PEP 562): a name is imported from its module on first use.

`import flamegraph.cli` runs `flamegraph/__init__.py`, and `import flamegraph.record.spec` runs
`flamegraph/record/__init__.py`: with eager re-exports every command would import every stage
(folding, recording, rendering) before parsing its arguments.

    __getattr__ = lazy_exports(__name__, {"fold_perf": ".fold", ...})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `name` from `exports[name]` (relative to `package`) once."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later look-ups are plain attribute reads
        return value

    return __getattr__
