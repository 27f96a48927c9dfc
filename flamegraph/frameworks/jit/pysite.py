"""The Python processes a recorded command starts, given what its own interpreter gets (Python 3.12+).

The command's interpreter runs through the launcher (`flamegraph_launcher.start_python`: jitdump marker,
trampoline bytes, and an at-fork hook that does the same in every forked child). A child started afresh
(multiprocessing's spawn workers and resource tracker, `subprocess.run([sys.executable, ...])`) inherits
our PYTHONPERFSUPPORT=1, so its functions get trampolines and a /tmp/perf-PID.map, but not the launcher:
without unwind info its stacks would stop at its first Python frame. So the recorder puts a directory of
its own first on the command's PYTHONPATH, holding only this `sitecustomize.py`, which every such child
imports at start-up (`site`): it takes its directory off sys.path again (the program's path is as without
us), runs `pychild.start(DIR)` (loaded by file) in a 3.12+ interpreter other than the command's own, and
then imports the sitecustomize it hides, if there is one (Debian's), as if ours were not there. Written in
Python 2's syntax too: any Python the command starts reads it. A child run with -S, -E or -I does not (-E
and -I ignore PYTHONPERFSUPPORT too); the recorder says which processes' stacks stay cut.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ...io.private import private_dir, replace_file
from . import pychild

SITE = """\
# Written by `flamegraph record` for the Python processes its command starts: see flamegraph/frameworks/jit/pysite.py
import sys


def _flamegraph_child():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    if sys.version_info < (3, 12) or {launcher!r} in getattr(sys, "orig_argv", ()):
        return  # no perf support; or the command's own interpreter, which the launcher starts
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_flamegraph_pychild", {pychild!r})
        pychild = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(pychild)
        pychild.start({directory!r})
    except Exception as err:
        sys.stderr.write("flamegraph: pid %d: no unwind info for its Python functions: %s\\n" % (os.getpid(), err))


_flamegraph_child()
del _flamegraph_child
_flamegraph_site = sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # the one ours hides (Debian's), found on the path as it is without us
except ImportError as hidden:
    sys.modules["sitecustomize"] = _flamegraph_site
    if getattr(hidden, "name", "sitecustomize") != "sitecustomize":
        raise
"""


def install(directory: Path, launcher: Path, env: Mapping[str, str]) -> dict[str, str]:
    """DIR/site/sitecustomize.py written; `env` with DIR/site first on PYTHONPATH (the user's after it)."""
    site = private_dir(directory / "site")
    text = SITE.format(launcher=str(launcher), pychild=pychild.__file__, directory=str(directory))
    replace_file(site / "sitecustomize.py", text.encode())
    path = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    return {**env, "PYTHONPATH": f"{site}{os.pathsep}{path}" if path else str(site)}
