"""`--cp` / `--palette-file`: load flamegraph.pl's palette.map for the renderer, refusing anything else.

The renderer extends the map in memory; `render` saves it with the one safe writer afterwards. A file
is only ever rewritten when it is missing, empty, or already a palette (every line `name->rgb(r,g,b)`),
so a folded input or a README given by mistake is reported and left unchanged.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..color import BadPalette, parse_palette
from ..io.diagnostics import InputMissing, Problem


def load_palette(path: Path) -> dict[str, str]:
    """name -> '#rrggbb' from `path`; a missing file (or a device such as /dev/null) is an empty palette."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise InputMissing(f"{path}: cannot read palette file: {err.strerror}") from None
    if stat.S_ISCHR(mode):
        return {}
    if not stat.S_ISREG(mode):
        raise InputMissing(f"{path}: not a palette file (not a regular file)")
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as err:
        raise InputMissing(f"{path}: cannot read palette file: {err.strerror}") from None
    try:
        return parse_palette(text)
    except BadPalette as bad:
        problem = Problem(str(path), bad.line, "bad-palette-line", bad.text)
        raise InputMissing(f"{problem} (not a palette file; it is left unchanged)") from None
