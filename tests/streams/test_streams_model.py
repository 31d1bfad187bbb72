"""Property test: random interleavings of writers and readers against a model of the log."""

from __future__ import annotations

import itertools

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgmbus import streams
from tests.streams.conftest import drain

WRITERS = 3
ops = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(0, WRITERS - 1)),
        st.tuples(st.just("savepoint_rollback"), st.integers(0, WRITERS - 1)),
        st.tuples(st.just("commit"), st.integers(0, WRITERS - 1)),
        st.tuples(st.just("rollback"), st.integers(0, WRITERS - 1)),
        st.tuples(st.just("read"), st.integers(1, 4)),
    ),
    min_size=5,
    max_size=40,
)
_groups = itertools.count()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(schedule=ops)
def test_reader_sees_exactly_the_committed_events(
    shared_stream_dsn: str, schedule: list[tuple[str, int]]
) -> None:
    group = f"model_{next(_groups)}"
    with psycopg.connect(shared_stream_dsn) as reader:
        streams.create_group(reader, group, start="now")
        reader.commit()
        writers = [psycopg.connect(shared_stream_dsn) for _ in range(WRITERS)]
        pending: list[list[int]] = [[] for _ in range(WRITERS)]
        committed: set[int] = set()
        seen: list[int] = []
        try:
            for op, arg in schedule:
                if op == "publish":
                    pending[arg].append(streams.publish(writers[arg], "m", {"w": arg}))
                elif op == "savepoint_rollback":
                    writers[arg].execute("SAVEPOINT s")
                    streams.publish(writers[arg], "m", {"gone": True})
                    writers[arg].execute("ROLLBACK TO SAVEPOINT s")
                elif op == "commit":
                    writers[arg].commit()
                    committed.update(pending[arg])
                    pending[arg] = []
                elif op == "rollback":
                    writers[arg].rollback()
                    pending[arg] = []
                else:
                    got = [e.id for e in drain(reader, group, max_events=arg)]
                    assert set(got) <= committed, "no phantom, no uncommitted event"
                    seen.extend(got)
            for i, w in enumerate(writers):
                w.commit()
                committed.update(pending[i])
            seen.extend(e.id for e in drain(reader, group, max_events=2))
        finally:
            for w in writers:
                w.close()
    assert len(seen) == len(set(seen)), "no duplicate"
    assert set(seen) == committed, "no loss"
