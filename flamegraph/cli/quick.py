"""`flamegraph fold ARGS` and `flamegraph convert IN OUT` without typer: their options read as typer's
click reads them, anything else to typer.

Importing typer (its vendored click, inspect, subprocess, uuid...) and building the command from its
signature cost more than folding a small file. A command line of `fold` or `convert` made only of its
options and arguments is read here, with click's rules (options and arguments in any order, `--` ends
the options, `--opt=VALUE`, `-oFILE`, `-j2`, the last of a repeated option wins, a repeatable one
collects) and its conversions (`-j` an int from 1, paths readable when they exist), then `run_fold` or
`run_convert` runs as the typer command would run it. Whatever this does not know goes to typer, which
alone prints help, usage errors and completions: `-h`, an unknown or misspelt option, a missing value
or argument, a flag given a value, `-j 0`.

    flamegraph fold perf.txt -o out.folded -j2       <- read here
    flamegraph fold --with-pid --event=cpu-clock -    <- read here
    flamegraph convert perf.txt out.svg --title T    <- read here
    flamegraph fold --help ; flamegraph convert x    <- typer
    flamegraph --help                                <- help_text.py (typer's text, made ahead of time)

FOLD_OPTIONS and CONVERT_OPTIONS must list the commands' options as typer declares them
(tests/test_cli_quick.py compares them); an option missing here only sends its command lines to typer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

# What an option takes: JOBS an int >= 1, MANY a text each time it is given (a list).
FLAG, TEXT, PATH, JOBS, MANY = "flag", "text", "path", "jobs", "many"

# option string -> (run_fold's parameter, what it takes, the value a flag sets)
FOLD_OPTIONS: dict[str, tuple[str, str, bool | None]] = {
    "-o": ("output", PATH, None),
    "--output": ("output", PATH, None),
    "--with-pid": ("with_pid", FLAG, True),
    "--with-tid": ("with_tid", FLAG, True),
    "--annotate-kernel": ("annotate_kernel", FLAG, True),
    "--annotate-jit": ("annotate_jit", FLAG, True),
    "--annotate": ("annotate", FLAG, True),
    "--addrs": ("addrs", FLAG, True),
    "--srcline": ("srcline", FLAG, True),
    "-e": ("event", TEXT, None),
    "--event": ("event", TEXT, None),
    "--window": ("window", TEXT, None),
    "--per-event": ("per_event", PATH, None),
    "-j": ("jobs", JOBS, None),
    "--jobs": ("jobs", JOBS, None),
    "--strict": ("strict", FLAG, True),
    "--compat": ("compat", FLAG, True),
    "--offcpu": ("offcpu", FLAG, True),
    "--group-unknown": ("group_unknown", FLAG, True),
    "--no-group-unknown": ("group_unknown", FLAG, False),
    "--report": ("report", FLAG, True),
    "--scheduler": ("scheduler", TEXT, None),
    "--pid": ("old_pid", FLAG, True),
    "--tid": ("old_tid", FLAG, True),
    "--kernel": ("old_kernel", FLAG, True),
    "--jit": ("old_jit", FLAG, True),
    "--all": ("old_all", FLAG, True),
    "--event-filter": ("old_event", TEXT, None),
}
CONVERT_OPTIONS: dict[str, tuple[str, str, bool | None]] = {
    "--to": ("to", TEXT, None),
    "--title": ("title", TEXT, None),
    "--threads": ("threads", FLAG, True),
    "--no-threads": ("threads", FLAG, False),
    "--group-unknown": ("group_unknown", FLAG, True),
    "--no-group-unknown": ("group_unknown", FLAG, False),
    "--unit": ("unit", TEXT, None),
    "-e": ("event", TEXT, None),
    "--event": ("event", TEXT, None),
    "--meta": ("meta", MANY, None),
    "--strict": ("strict", FLAG, True),
}


class QuickCommand(NamedTuple):
    options: dict[str, tuple[str, str, bool | None]]
    arguments: tuple[str, ...] | None  # the parameters of exactly this many arguments; None: any, as `inputs`


QUICK_COMMANDS = {
    "fold": QuickCommand(FOLD_OPTIONS, None),
    "convert": QuickCommand(CONVERT_OPTIONS, ("source", "output")),
}


class _Unread(Exception):
    """A command line typer must read."""


def parse_args(command: str, args: list[str]) -> dict[str, Any] | None:
    """The run function's keyword arguments for `COMMAND ARGS` (only those given), or None: typer must
    read them."""
    try:
        return _parse(QUICK_COMMANDS[command], args)
    except _Unread:
        return None


def _parse(command: QuickCommand, args: list[str]) -> dict[str, Any]:
    options = command.options
    valued_short = {option for option, (_, takes, _) in options.items() if len(option) == 2 and takes != FLAG}
    values: dict[str, Any] = {}
    inputs: list[str] = []
    rest = list(reversed(args))  # popped from the end: the next argument is rest[-1]
    while rest:
        arg = rest.pop()
        if arg == "--":
            inputs += reversed(rest)
            break
        if arg[:1] != "-" or len(arg) == 1:  # an input ('-' is stdin)
            inputs.append(arg)
            continue
        name, equals, attached = arg.partition("=") if arg[:2] == "--" else (arg[:2], "", arg[2:])
        if name not in options or (arg[:2] != "--" and len(arg) > 2 and arg[:2] not in valued_short):
            raise _Unread  # unknown, help, or short flags run together: typer's
        parameter, takes, flag_value = options[name]
        if takes == FLAG:
            if equals:
                raise _Unread  # a flag given a value: typer's usage error
            values[parameter] = flag_value
            continue
        if equals or attached:
            value = attached
        elif rest:
            value = rest.pop()  # whatever follows, even '-x' (click takes it as the value)
        else:
            raise _Unread  # the value is missing: typer's usage error
        if takes == MANY:
            values.setdefault(parameter, []).append(value)
        else:
            values[parameter] = _convert(value, takes)
    if command.arguments is None:
        if inputs:
            values["inputs"] = inputs
    elif len(inputs) == len(command.arguments):
        values.update(zip(command.arguments, inputs, strict=True))
    else:
        raise _Unread  # an argument missing or one too many: typer's usage error
    return values


def _convert(value: str, takes: str) -> Any:
    if takes == JOBS:
        try:
            jobs = int(value)
        except ValueError:
            raise _Unread from None
        if jobs < 1:
            raise _Unread
        return jobs
    if takes == PATH:
        # typer's path type: a path that exists must be readable (typer reports the one that is not)
        if os.path.exists(value) and not os.access(value, os.R_OK):
            raise _Unread
        return Path(value)
    return value


def completing() -> bool:
    """The shell asks for completions (click's `_<PROG>_COMPLETE` variable): typer answers."""
    return any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ)


# click wraps help at min(the terminal's columns, 80) - 2: from 80 columns on, the text help_text.py holds.
WIDEST = 80
USAGE_ROOM = 40  # a longer program name may wrap the usage line otherwise than the stored one


def terminal_columns() -> int:
    """The columns click reads through shutil.get_terminal_size (COLUMNS, then stdout's terminal, then
    80), without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or WIDEST


def program_name() -> str:
    """The name click puts on the usage line: the script's (`flamegraph`), or `python -m flamegraph`."""
    package = getattr(sys.modules["__main__"], "__package__", None)
    base = os.path.basename(sys.argv[0])
    if not package:
        return base
    name = os.path.splitext(base)[0]
    return f"python -m {(package if name == '__main__' else f'{package}.{name}').lstrip('.')}"


def print_help_quickly(args: list[str]) -> bool:
    """`flamegraph --help` from help_text.py (typer's own bytes) where click would print the same."""
    if args not in (["--help"], ["-h"]) or completing() or terminal_columns() < WIDEST:
        return False
    prog = program_name()
    if len(prog) > USAGE_ROOM:
        return False
    from .help_text import PROG, TEXT

    sys.stdout.write(TEXT.replace(f"Usage: {PROG} ", f"Usage: {prog} ", 1))
    sys.stdout.flush()
    return True


def run_quickly(args: list[str]) -> bool:
    """Run `flamegraph ARGS` here if it is a fold or convert command line this module reads, or the
    top-level help; False: typer must."""
    if print_help_quickly(args):
        return True
    if not args or args[0] not in QUICK_COMMANDS or completing():
        return False
    values = parse_args(args[0], args[1:])
    if values is None:
        return False
    if args[0] == "fold":
        from .fold_run import run_fold

        run_fold(**values)
    else:
        from .convert_run import run_convert

        run_convert(**values)
    return True
