"""Data access: the only modules that load the packaged named queries (``sql/*.sql``).

One module per engine owns that engine's query files; every other module takes its SQL from
here, so a query's callers are found from one place and no module reaches into another
engine's file. ``rows`` holds the helpers that run a query and shape its result.
"""
