"""How a command leaves early without an error of ours: its reader left, or the user pressed Ctrl-C.

Apart from the typer application (cli/app.py) so that `main` can catch them on the quick path
(cli/quick.py), which never imports typer."""

from __future__ import annotations


class ReaderLeft(Exception):
    """stdout's reader left early (`flamegraph fold ... | head`): `main` ends the run quietly, exit 0.
    Not an OSError: typer turns an EPIPE OSError that leaves a command into exit 1 before we see it."""


class Interrupted(Exception):
    """Ctrl-C left the command: `main` says so in one line, exit 130. Not a KeyboardInterrupt: typer
    turns that into a silent exit 130 before we see it."""
