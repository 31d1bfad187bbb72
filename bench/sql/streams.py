"""The stream paths: publish 1 per transaction, 100 per statement, and a consumer group's read.

Peers: raw ``INSERT`` into a table shaped like ``mbus.events`` and PgQ (``insert_event``;
``next_batch``/``get_batch_events``/``finish_batch`` over batches made by ``pgq.ticker``, called
by the fill after every 1,000 events; after every 10 on read10, a reader of small batches). A
group has one reader, so the reads run with 1 client.
"""

from __future__ import annotations

from bench.sql.model import PathSpec, Side, with_reference

SQLFILE = "streams.sql"


def _side(
    name: str,
    engine: str,
    path: str,
    per_tx: int,
    prepare: tuple[str, ...],
    fill: tuple[str, ...] = (),
    backlog: str | None = None,
    fill_chunk: int = 1000,
) -> Side:
    return Side(
        name,
        engine,
        f"{path}_{name}.sql",
        per_tx=per_tx,
        prepare=prepare,
        fill=fill,
        backlog=backlog,
        fill_chunk=fill_chunk,
    )


PATHS: tuple[PathSpec, ...] = (
    PathSpec(
        "publish1",
        "publish 1 event per transaction",
        (
            _side("raw", "plain", "publish1", 1, ("raw_events",)),
            _side("pgmbus", "mbus", "publish1", 1, ()),
            _side("pgq", "pgq", "publish1", 1, ("pgq_queue",)),
        ),
    ),
    PathSpec(
        "publish100",
        "publish 100 events per statement",
        (
            _side("raw", "plain", "publish100", 100, ("raw_events",)),
            _side("pgmbus", "mbus", "publish100", 100, ()),
            _side("pgmbus-rows", "mbus", "publish100", 100, ()),
            _side("pgq", "pgq", "publish100", 100, ("pgq_queue",)),
        ),
    ),
    PathSpec(
        "read",
        "a consumer group reads 1,000 events per transaction (1 reader)",
        (
            _side("raw", "plain", "read", 1000, ("raw_events",), ("raw_fill",), "raw_backlog"),
            _side("pgmbus", "mbus", "read", 1000, ("mbus_group",), ("mbus_fill",), "mbus_backlog"),
            _side(
                "pgq", "pgq", "read", 1000, ("pgq_queue",), ("pgq_fill", "pgq_tick"), "pgq_backlog"
            ),
        ),
        sync=(True,),
        max_clients=1,
        guess_per_client=700_000,
    ),
    # A reader that wants fresh data reads small batches: the cost per batch, not per event.
    PathSpec(
        "read10",
        "a consumer group reads 10 events per transaction (1 reader)",
        (
            _side("raw", "plain", "read10", 10, ("raw_events",), ("raw_fill",), "raw_backlog"),
            _side("pgmbus", "mbus", "read10", 10, ("mbus_group",), ("mbus_fill",), "mbus_backlog"),
            _side(
                "pgq",
                "pgq",
                "read10",
                10,
                ("pgq_queue10",),
                ("pgq_fill", "pgq_tick"),
                "pgq_backlog",
                fill_chunk=10,
            ),
        ),
        sync=(True,),
        max_clients=1,
        guess_per_client=40_000,
    ),
)

PATHS = with_reference(PATHS)
