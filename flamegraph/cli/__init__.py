"""The `flamegraph` command: maps our error classes to one line and an exit code."""

from __future__ import annotations

import os
import sys

from ..diagnostics import EXIT_INTERRUPTED, FlamegraphError
from . import fold as _fold  # noqa: F401  (registers the command)
from . import offcpu as _offcpu  # noqa: F401  (registers the command)
from . import record as _record  # noqa: F401  (registers the command)
from . import render as _render  # noqa: F401  (registers `render` and `diff`)
from .app import app

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except FlamegraphError as err:
        print(f"flamegraph: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        print("flamegraph: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # `flamegraph fold ... | head`: the reader left; not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
