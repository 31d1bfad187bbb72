"""``python -m pgmbus``: the same as the ``pgmbus`` command."""

from pgmbus.cli import main

main()
