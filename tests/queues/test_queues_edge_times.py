"""Times a client cannot read back: refused at the post and the lease, and read as datetime's
ends when a row holds one anyway, so a claim that committed never loses its messages."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from pgmbus.errors import InvalidArgument
from pgmbus.queues import Bus
from pgmbus.queues.edge_times import EARLIEST, LATEST

OUT_OF_RANGE = [
    ("expires", "12000-01-01"),
    ("delayed_until", "-infinity"),
    ("delayed_until", "294276-01-01"),
    ("delayed_until", "0044-03-15 BC"),
    ("delayed_until", "1800-01-01"),
]


@pytest.mark.parametrize(("field", "value"), OUT_OF_RANGE)
def test_a_post_with_a_time_out_of_range_is_refused_and_stores_nothing(
    autodb: str, field: str, value: str
) -> None:
    with psycopg.connect(autodb, autocommit=True) as conn:
        for call in (
            f"SELECT mbus.post_jobs('{{}}'::jsonb, {field} => %s::timestamptz)",
            f"SELECT mbus.postn_jobs(ARRAY['{{}}'::jsonb], {field} => %s::timestamptz)",
            f"SELECT mbus.post('jobs', '{{}}'::jsonb, {field} => %s::timestamptz)",
        ):
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(call, (value,))
            assert caught.value.sqlstate == "MB006", call
            assert f"{field} " in str(caught.value) and "out of range" in str(caught.value)
        row = conn.execute("SELECT count(*) FROM mbus.q_jobs").fetchone()
        assert row == (0,)


def test_infinity_means_never_and_reads_back_as_the_latest_time(autodb: str) -> None:
    """'infinity' is the one time past 9998 a post takes (a message held until taken, as the
    sagas' bung): the bus reads it back as datetime.max."""
    with Bus(autodb) as bus, psycopg.connect(autodb, autocommit=True) as conn:
        row = conn.execute("SELECT mbus.post_jobs('{}', delayed_until => 'infinity')").fetchone()
        assert row is not None
        assert bus.consume("jobs", limit=10) == []  # never due
        taken = bus.take(row[0])
        assert taken is not None and taken.delayed_until == LATEST
        conn.execute("SELECT mbus.post_jobs('{\"n\": 1}', expires => 'infinity')")
        (never,) = bus.consume("jobs", limit=10)
        assert never.data == {"n": 1} and never.expires == LATEST


def test_leases_and_nack_delays_past_a_century_are_refused(autodb: str) -> None:
    with Bus(autodb) as bus:
        bus.post("jobs", {"n": 1})
        with pytest.raises(InvalidArgument, match="out of range"):
            bus.lease("jobs", lease=1e12)
        (message,) = bus.lease("jobs", lease=30)
        with pytest.raises(InvalidArgument, match="out of range"):
            bus.extend(message, timedelta(days=365 * 101))
        with pytest.raises(InvalidArgument, match="out of range"):
            bus.nack(message, delay=timedelta(days=365 * 101))
        bus.nack(message)  # still leased until here: the refusals changed nothing
        (again,) = bus.lease("jobs", lease=30)
        assert again.iid == message.iid and again.attempts == 2


def test_a_row_holding_an_unreadable_time_is_read_not_lost(autodb: str) -> None:
    """Written by hand (or by an older version): the batch that claims it arrives whole."""
    with Bus(autodb) as bus:
        iids = [bus.post("jobs", {"n": n}) for n in range(3)]
        with psycopg.connect(autodb, autocommit=True) as conn:
            conn.execute(
                "UPDATE mbus.q_jobs SET expires = 'infinity', delayed_until = '-infinity'"
                " WHERE data->>'n' = '1'"
            )
        got = bus.consume("jobs", limit=10)
        assert sorted(m.iid for m in got) == sorted(iids)
        (odd,) = [m for m in got if m.data["n"] == 1]
        assert odd.expires == LATEST and odd.delayed_until == EARLIEST
