"""The typer application object; each command lives in its own module under flamegraph/cli/."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from .exits import Interrupted, ReaderLeft

__all__ = ["LISTED", "CommandGroup", "Interrupted", "ReaderLeft", "app", "version"]

# The commands as `flamegraph --help` lists them, in its order: (name, short help, help). The group's
# help needs no more of a command, so it imports none of their modules (every signature, its defaults,
# the record and render options: ~180 M instructions); tests/test_startup.py holds this to the commands.
LISTED: tuple[tuple[str, str | None, str | None], ...] = (
    ("convert", "Convert a profile to speedscope, pprof, Chrome trace or SVG.", None),
    ("fold", "Collapse perf script output or perf.data into folded stacks.", None),
    ("offcpu", "Record where the threads of a command or process wait, and draw it.", None),
    ("record", "Profile a command or a process on-CPU and draw its graph.", None),
    ("render", "Draw folded stacks as an interactive SVG flame graph.", None),
    ("diff", "Draw what changed between two profiles (differential graph).", None),
    ("fleet", None, "One flame graph of a job that runs on many hosts, recorded on a Dask cluster."),
)


class CommandGroup(TyperGroup):
    """The command group; a closed stdout pipe leaves the command as `ReaderLeft`, Ctrl-C as
    `Interrupted`. Without any command registered (`flamegraph --help`, `-V`), it lists LISTED."""

    def list_commands(self, ctx: Any) -> list[str]:
        return super().list_commands(ctx) or [name for name, _, _ in LISTED]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self.commands:
            return super().get_command(ctx, cmd_name)
        from typer.core import TyperCommand

        listed = {name: (short, text) for name, short, text in LISTED}
        if cmd_name not in listed:
            return None
        short, text = listed[cmd_name]
        return TyperCommand(cmd_name, short_help=short, help=text)  # to be listed, never run

    def invoke(self, ctx: Any) -> Any:  # typer's (vendored) click.Context
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderLeft() from None
        except KeyboardInterrupt:
            raise Interrupted() from None


app = typer.Typer(
    name="flamegraph",
    cls=CommandGroup,
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,  # a traceback means a bug: keep it plain and complete
    rich_markup_mode=None,  # names like _[k] must print as they are
    context_settings={"help_option_names": ["-h", "--help"]},
)


def version() -> str:
    """The installed package's version (importlib.metadata: no import of the stages)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("flamegraph-perf")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"flamegraph {version()}")
        raise typer.Exit()


@app.callback()
def _group(
    _version: bool = typer.Option(
        False, "--version", "-V", help="print the version and exit", callback=_print_version, is_eager=True
    ),
) -> None:
    """Interactive SVG flame graphs from Linux perf: on-CPU, off-CPU, differential.

    perf recordings -> folded stacks -> self-contained SVGs you open in a browser.

    \b
    Examples:
      flamegraph record -o train.svg -- python train.py
      flamegraph offcpu --pid 4242 --duration 5 -o waits.svg
      flamegraph fold perf.data -o out.folded && flamegraph render out.folded -o out.svg
    """
