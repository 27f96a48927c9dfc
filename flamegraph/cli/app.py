"""The typer application object; each command lives in its own module under flamegraph/cli/."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="flamegraph",
    help="perf recordings -> folded stacks -> interactive, self-contained SVG flame graphs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # a traceback means a bug: keep it plain and complete
    rich_markup_mode=None,  # names like _[k] must print as they are
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _group() -> None:
    """perf recordings -> folded stacks -> interactive, self-contained SVG flame graphs."""
