"""The `flamegraph` command: maps our error classes to one line and an exit code.

Each command lives in its own module; only the one being run is imported (the render and JIT
stages cost ~0.15 s of imports that `flamegraph fold` does not need). `--help` imports them all.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from types import FrameType

from ..diagnostics import EXIT_INTERRUPTED, FlamegraphError, StopSignal
from .app import Interrupted, ReaderLeft, app

__all__ = ["app", "main", "register_commands"]

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
    """Import the module of the command in argv, or every command module when it names none."""
    args = argv if argv is not None else sys.argv[1:]
    wanted = COMMAND_MODULES.get(args[0]) if args else None
    for module in [wanted] if wanted else sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"{__name__}.{module}")


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGHUP:
        leave_hung_up_terminal()
    raise StopSignal(signum)


def leave_hung_up_terminal() -> None:
    """After a hangup, writing to the terminal fails (EIO) and would turn the orderly stop into a
    traceback: stdout and stderr that were that terminal go to /dev/null, as nohup would have sent them."""
    for fd in (1, 2):
        if not os.isatty(fd):
            continue
        try:
            os.write(fd, b"")  # a hung-up terminal fails even this
        except OSError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP act as Ctrl-C does: an exception in the main thread, so a recording stops
    perf cleanly and is still drawn, temporary files go and children are ended. An ignored signal
    (`nohup` ignores SIGHUP) stays ignored."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _raise_stop)


def main() -> None:
    try:
        stop_on_signals()
        register_commands()
        app()
    except FlamegraphError as err:
        print(f"flamegraph: {err}", file=sys.stderr)
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
