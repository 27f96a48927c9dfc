"""The typer application object; each command lives in its own module under flamegraph/cli/."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from .exits import Interrupted, ReaderLeft

__all__ = ["CommandGroup", "Interrupted", "ReaderLeft", "app", "version"]


class CommandGroup(TyperGroup):
    """The command group; a closed stdout pipe leaves the command as `ReaderLeft`, Ctrl-C as
    `Interrupted`."""

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
