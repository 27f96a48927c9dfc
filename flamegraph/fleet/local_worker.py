"""The Dask preload of the workers of a LocalCluster we start: leave the terminal's process group.

A LocalCluster's worker processes are our children, in our process group: Ctrl-C in the terminal
(SIGINT to the whole foreground group) killed them mid-task, with Dask's tracebacks, before the
client could stop their recordings. In their own group only the client gets the terminal's signals,
and stops every host as it stops a remote one (a Dask Event). They still end with the client: Dask
ends a worker process whose parent is gone.
"""

from __future__ import annotations

import os


def dask_setup(worker: object) -> None:
    """Called by Dask in each worker process when it starts (`preload=[__name__]`)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass  # already a group (or session) leader: not in the terminal's group either
