"""The CLI's manners with inputs and outputs: say what a wrong input is, say when stdin is being read,
never pour SVG markup onto a terminal, and open a result in the user's browser (`--open`)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..io.diagnostics import BadOption, InputMissing

# Per command: what it reads, and what to say for each kind of input it cannot read ({command}: the one run).
ADVICE = {
    "perf script output": "run `flamegraph fold {path} -o out.folded` first, then {command} out.folded",
    "a perf.data file": "run `flamegraph fold {path} -o out.folded` first (it runs perf script), "
    "then {command} out.folded",
    "an SVG (a drawn flame graph)": "open it in a web browser; {command} reads folded stacks",
    "JSON": "{command} reads folded stacks; `flamegraph convert` turns a folded file into other formats",
}
FOLD_ADVICE = {
    "folded stacks": "they are folded already: draw them with `flamegraph render {path} -o out.svg`",
    "an SVG (a drawn flame graph)": "open it in a web browser; fold reads `perf script` output or perf.data",
    "JSON": "fold reads `perf script` output or perf.data",
}


def refuse_wrong_input(paths: list[str], expected: str, command: str) -> None:
    """Stop at an input that is certainly not what `command` reads, with what it is and what to do."""
    refuse_binary(paths)
    advice = FOLD_ADVICE if command == "fold" else ADVICE
    for path in paths:
        kind = _kind(path)
        shown = "<stdin>" if path == "-" else path
        if kind is not None and kind in advice:
            hint = advice[kind].format(path=shown if path != "-" else "FILE", command=command)
            raise InputMissing(f"{shown}: this looks like {kind}, not {expected}: {hint}")


def refuse_binary(paths: list[str]) -> None:
    """Stop at binary input (not gzip, not perf.data): read as text, it is pages of escaped bytes."""
    from ..io.sniff import BINARY

    for path in paths:
        if _kind(path) == BINARY:
            shown = "<stdin>" if path == "-" else path
            raise InputMissing(f"{shown}: not perf script text or folded stacks: looks binary")


def _kind(path: str) -> str | None:
    from ..io.sniff import kind_of_head, read_head

    head = _stdin_head() if path == "-" else read_head(path)
    return kind_of_head(head) if head else None


def _stdin_head() -> bytes:
    """What stdin holds so far, without consuming it (a terminal is never waited for)."""
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None or sys.stdin.isatty():
        return b""
    peek = getattr(stream, "peek", None)
    try:
        return peek(1 << 16) if peek is not None else b""
    except (OSError, ValueError):
        return b""


def reading_stdin_note(paths: list[str], what: str) -> None:
    """A user who typed `flamegraph render` alone sees why nothing happens."""
    if "-" in paths and sys.stdin is not None and sys.stdin.isatty():
        import typer  # here: `fold` on its quick path (cli/quick.py) starts without typer

        typer.echo(
            f"flamegraph: reading {what} from stdin (the terminal): type or paste them and end with Ctrl-D, "
            "or give a FILE; --help shows the options",
            err=True,
        )


def check_terminal_output(output: Path | None, what: str) -> None:
    """`render` without -o on a terminal: no SVG markup on the screen, a hint instead."""
    if (output is None or str(output) == "-") and sys.stdout is not None and sys.stdout.isatty():
        raise BadOption(f"{what} would be written to the terminal: give -o FILE.svg (or redirect: > FILE.svg)")


def open_in_browser(output: Path | None) -> None:
    """--open: the written file in the user's web browser ($BROWSER is honoured); a note if none is found."""
    import typer

    if output is None or str(output) == "-":
        typer.echo("flamegraph: --open: the output went to stdout, there is no file to open", err=True)
        return
    import webbrowser  # only for --open

    uri = Path(output).resolve().as_uri()
    try:
        opened = webbrowser.open(uri)
    except webbrowser.Error:
        opened = False
    if not opened:
        typer.echo(f"flamegraph: --open: no web browser found: open {uri} yourself", err=True)
