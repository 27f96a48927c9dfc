"""The `flamegraph` command: maps our error classes to one line and an exit code.

Each command lives in its own module; only the one being run is imported (the render and JIT
stages cost ~0.15 s of imports that `flamegraph fold` does not need). `--help` imports them all.
A plain `fold` command line does not even import typer (cli/quick.py).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ..io.diagnostics import EXIT_INTERRUPTED, FlamegraphError, StopSignal, stop_on_signals, terminal_text
from .exits import Interrupted, ReaderLeft
from .quick import completing, run_quickly

__all__ = ["app", "main", "register_commands", "run"]


def __getattr__(name: str) -> Any:
    """`app`, the typer application, imported when asked for (the quick path never imports typer)."""
    if name == "app":
        from .app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# command name -> module under flamegraph/cli that registers it with @app.command
COMMAND_MODULES = {
    "fold": "fold",
    "render": "render",
    "diff": "render",
    "record": "record",
    "offcpu": "offcpu",
    "convert": "convert",
    "fleet": "fleet",
}


def register_commands(argv: list[str] | None = None) -> None:
    """Import the module of the command in argv, none when argv names no command but only options of
    the group (`--help`, `-V`: the group lists the commands from a table, cli/app.py), or every
    command module (an unknown command: typer suggests a known one; a shell asking for completions:
    its words are not in argv)."""
    args = argv if argv is not None else sys.argv[1:]
    wanted = COMMAND_MODULES.get(args[0]) if args else None
    if wanted is None and all(arg.startswith("-") for arg in args) and "--" not in args and not completing():
        return
    for module in [wanted] if wanted else sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"{__name__}.{module}")


def run() -> None:
    """The `flamegraph` program (its console script, and `python -m flamegraph`)."""
    main(exit_at_once=True)


def main(exit_at_once: bool = False) -> None:
    """`exit_at_once`: this call is the whole program, so a fold or convert that succeeded ends the
    process as soon as its output is flushed: freeing each of the profile's objects one by one at
    interpreter shutdown would cost ~5 % of a `convert` (nothing registered at exit on those paths)."""
    try:
        stop_on_signals()
        if run_quickly(sys.argv[1:]):
            if exit_at_once:
                for stream in (sys.stdout, sys.stderr):
                    if stream is not None:  # None: started with that descriptor closed
                        stream.flush()
                os._exit(0)
            return
        register_commands()
        from .app import app

        app()
    except FlamegraphError as err:
        print(f"flamegraph: {terminal_text(str(err))}", file=sys.stderr)
        sys.exit(err.exit_code)
    except StopSignal as stop:
        print(f"flamegraph: stopped by {stop.name}", file=sys.stderr)
        sys.exit(stop.exit_code)
    except (KeyboardInterrupt, Interrupted):
        print("flamegraph: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except (BrokenPipeError, ReaderLeft):
        # `flamegraph fold ... | head`: the reader left; not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
