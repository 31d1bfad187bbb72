"""``python -m bench jobs``: jobs per second end to end, pgmbus's workers against their peers.

Each side is a job system a Python team might pick: a driver (this process) enqueues no-op jobs
taking one integer, and one worker process per side runs them. ``record`` is what every side's
job calls; ``sides`` lists the sides; ``run`` measures and reports.
"""
