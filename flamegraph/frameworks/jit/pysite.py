"""Every Python process of a recorded command, its own first, starts our Python support at start-up (3.12+).

A command's Python processes inherit our PYTHONPERFSUPPORT=1, so their functions get trampolines and a
/tmp/perf-PID.map; without unwind info their stacks would stop at their first Python frame. So the recorder
puts a directory of its own first on the command's PYTHONPATH, holding only this `sitecustomize.py`, which
every such interpreter imports at start-up (`site`): the command's own (which runs as given, not inside a
launcher: its __file__, sys.argv, sys.path and sys.modules are as without us), multiprocessing's spawn
workers and resource tracker, `subprocess.run([sys.executable, ...])`. It takes its directory off sys.path
again, runs `pychild.start(DIR)` (loaded by file, no package import) in a 3.12+ interpreter, removes from
sys.modules what that imported (ctypes...: a module of the program's of that name still wins), and then
imports the sitecustomize it hides, if there is one (Debian's), as if ours were not there. An interpreter
our launcher starts with --python-dir (--jit, or -S/-E/-I, which read no site or no environment) is left
to the launcher. Written in Python 2's syntax too: any Python the command starts reads it. A child run
with -S, -E or -I does not read it (-E and -I ignore PYTHONPERFSUPPORT too); the recorder says which
processes' stacks stay cut.

The directory is a new one under our own cache (`$FLAMEGRAPH_CACHE/python-site/site-XXXX`, private), not in
the run's scratch directory: a descendant that outlives the run (a daemon) keeps the PYTHONPATH entry after
the directory is removed, and under a shared /tmp another user could then create it and plant a
sitecustomize that a root daemon's next Python would import. Nobody else may create anything under our cache.
Where the cache cannot be ours (a read-only home), the run's directory is used, as before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ...io.diagnostics import OutputFailed
from ...io.private import private_dir, replace_file, scratch_dir
from . import pychild
from .session import cache_base

SITE = """\
# Written by `flamegraph record` for the Python processes of its command: see flamegraph/frameworks/jit/pysite.py
import sys


def _flamegraph_child():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    if sys.version_info < (3, 12) or _flamegraph_launched(getattr(sys, "orig_argv", ())):
        return  # no perf support; or an interpreter our launcher (--jit) starts the same way itself
    before = set(sys.modules)
    try:
        path = {pychild!r}
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        pychild = {{"__name__": "_flamegraph_pychild", "__file__": path}}
        exec(code, pychild)
        pychild["start"]({directory!r})
    except Exception as err:
        sys.stderr.write("flamegraph: pid %d: no unwind info for its Python functions: %s\\n" % (os.getpid(), err))
    for name in set(sys.modules) - before:  # what we imported (ctypes...): the program's own of that name wins
        del sys.modules[name]


def _flamegraph_launched(argv):
    argv = list(argv)
    if {launcher!r} not in argv:
        return False
    options = argv[argv.index({launcher!r}) + 1:]
    return "--python-dir" in options[:options.index("--")] if "--" in options else False


_flamegraph_child()
del _flamegraph_child, _flamegraph_launched
_flamegraph_site = sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # the one ours hides (Debian's), found on the path as it is without us
except ImportError as hidden:
    sys.modules["sitecustomize"] = _flamegraph_site
    if getattr(hidden, "name", "sitecustomize") != "sitecustomize":
        raise
"""


def install(
    directory: Path, launcher: Path, env: Mapping[str, str], cache: Path | None = None
) -> tuple[dict[str, str], Path]:
    """SITE/sitecustomize.py written (SITE: a new private directory under `cache`, our cache by default);
    `env` with SITE first on PYTHONPATH (the user's after it), and SITE, for the caller to remove after the run."""
    try:
        site = scratch_dir("site-", private_dir((cache or Path(cache_base())) / "python-site"))
    except OutputFailed:  # (NotPrivate is one) a read-only or shared home: the run's own directory
        site = private_dir(directory / "site")
    text = SITE.format(launcher=str(launcher), pychild=pychild.__file__, directory=str(directory))
    replace_file(site / "sitecustomize.py", text.encode())
    path = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    return {**env, "PYTHONPATH": f"{site}{os.pathsep}{path}" if path else str(site)}, site
