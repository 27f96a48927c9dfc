"""What this process may do with perf: its capabilities and the kernel's perf_event_paranoid, for
the checks before recording and the words of a permission message.

    has_capability(CAP_PERFMON) -> bool        who_am_i() -> 'root' | 'not root' | ...
"""

from __future__ import annotations

import os
from pathlib import Path

CAP_IPC_LOCK, CAP_SYS_ADMIN, CAP_PERFMON = 14, 21, 38  # linux/capability.h


def has_capability(cap: int, status: str | None = None) -> bool:
    """Whether this process holds `cap` (effective set, from /proc/self/status's CapEff line)."""
    try:
        text = status if status is not None else Path("/proc/self/status").read_text()
    except OSError:
        return os.geteuid() == 0
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> cap & 1)
    return os.geteuid() == 0


def who_am_i() -> str:
    """'root', 'root without CAP_PERFMON/CAP_SYS_ADMIN' or 'not root', for permission messages."""
    if os.geteuid() != 0:
        return "not root"
    if has_capability(CAP_PERFMON) or has_capability(CAP_SYS_ADMIN):
        return "root"
    return "root without CAP_PERFMON/CAP_SYS_ADMIN"


def paranoid_level() -> str:
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "unknown"
