"""The parsers of number options: floats (`--duration`, `--grace`, `--min-us`) finite and in range, and
`--window START,END` (fold, record, offcpu) as a `Window`. Light: `fold` imports this, not the recorder.

click's FloatRange lets `nan` and `inf` through (no comparison with nan is true, inf passes any
minimum): `offcpu -p PID --duration nan` never stopped. They are refused here as a number below the
minimum is: one usage line, exit 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..io.diagnostics import BadOption

if TYPE_CHECKING:  # `--help` imports no stage: the window module reads perf script's grammar
    from ..window import Window


def finite(option: str, minimum: float) -> Callable[[str | float], float]:
    """A typer `parser=` for `option`: its text as a float that is a real number and at least `minimum`."""

    def parse(value: str | float) -> float:
        try:
            number = float(value)
        except ValueError:
            raise BadOption(f"{option} {value!r}: not a number") from None
        if not math.isfinite(number):
            raise BadOption(f"{option} {value!r}: not a finite number")
        if number < minimum:
            raise BadOption(f"{option} {value!r}: less than {minimum:g}")
        return number

    return parse


def parse_window_option(text: str | None) -> Window | None:
    """--window START,END (seconds, either side open) of `fold`, `record` and `offcpu`, or one usage line."""
    if text is None:
        return None
    try:
        from ..window import Window

        return Window.parse(text)
    except ValueError as err:
        raise BadOption(str(err)) from None
