"""The Dask preload of the workers of a LocalCluster we start: leave the terminal's process group.

A LocalCluster's worker processes are our children, in our process group: Ctrl-C in the terminal
(SIGINT to the whole foreground group) killed them mid-task, with Dask's tracebacks, before the
client could stop their recordings. In their own group only the client gets the terminal's signals,
and stops every host as it stops a remote one (a Dask Event). They still end with the client: Dask
ends a worker process whose parent is gone.

Until this preload runs they are still in the terminal's group: they start with the terminal's
signals blocked (cluster.py), and a Ctrl-C typed meanwhile, pending here, was meant for the client.
"""

from __future__ import annotations

import os
import signal
import threading

from .cluster import TERMINAL_SIGNALS


def dask_setup(worker: object) -> None:
    """Called by Dask in each worker process when it starts (`preload=[__name__]`), in its main thread."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass  # already a group (or session) leader: not in the terminal's group either
    if threading.current_thread() is threading.main_thread():
        for signum in TERMINAL_SIGNALS:
            # SIG_IGN discards a pending signal (POSIX), even a blocked one: the client had it too
            signal.signal(signum, signal.signal(signum, signal.SIG_IGN))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, TERMINAL_SIGNALS)
