"""A queue move that lingers between the target's commit and the source's, for fault tests.

Run as ``python slow_move.py HOME QUEUE SERVER``: kills of the fault test then often land in
the one window where the new server has a batch the old one still holds.
"""

from __future__ import annotations

import random
import sys
import time

from pgmbus.scaleout import move, move_queue


def _pause() -> None:
    time.sleep(random.uniform(0.0, 0.03))


if __name__ == "__main__":
    move.between_commits = _pause
    move_queue(sys.argv[1], sys.argv[2], sys.argv[3], batch=10, grace=0.3, wait=5.0)
