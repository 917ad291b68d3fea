"""The memory a run may take: one estimate of what is available, and the one refusal (exit 2) of a declared or
requested size that would not fit -- made before any array is allocated."""
from __future__ import annotations

import os

from fedcheck.core.errors import BadValue

__all__ = ["available_memory", "refuse_if_too_big", "GIB"]

GIB = float(2 ** 30)
#: a run may take this share of the available memory
SHARE = 0.8


def available_memory() -> float:
    """Bytes of physical memory available now (0 when the OS does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0.0


def refuse_if_too_big(need: float, what: str, advice: str) -> None:
    """:class:`~fedcheck.core.errors.BadValue` (one line: ``what`` would need about X GiB ...; ``advice``) when
    ``need`` bytes exceed :data:`SHARE` of the available memory."""
    avail = available_memory()
    if avail and need > SHARE * avail:
        raise BadValue(f"{what} would need about {need / GIB:.3g} GiB of memory (about {avail / GIB:.3g} GiB "
                       f"available); {advice}")
