"""What a database failure that escaped every API call answers, for the edges (the HTTP server).

The rule is store/faults.py's; the edges read it here, so that none of them imports the store.
"""

from __future__ import annotations

from bcfleet.store.faults import escaped_fault

__all__ = ["escaped_fault"]
