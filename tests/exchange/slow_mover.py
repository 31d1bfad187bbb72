"""A mover that lingers between the destination's commit and the source's, for fault tests.

Run as ``python slow_mover.py DSN``: the kills of the fault tests then often land in the one
window where the destination has a batch that the source still holds.
"""

from __future__ import annotations

import random
import sys
import time

from pgmbus.exchange import Bridge


class SlowBridge(Bridge):
    """``Bridge`` with a random pause of up to 30 ms between the two commits."""

    def _between_commits(self) -> None:
        time.sleep(random.uniform(0.0, 0.03))


if __name__ == "__main__":
    SlowBridge(sys.argv[1], batch=10, poll=0.02).run()
