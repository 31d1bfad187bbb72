"""The service's dashboard sampler is one loop for every object: one queue it cannot read
(its table locked by a transaction left open) must not stop the charts of the others."""

from __future__ import annotations

import psycopg
from psycopg import sql

from tests.ops.conftest import Service, start, wait_until


def test_a_queue_whose_table_is_locked_does_not_stop_the_other_queues_samples(
    db_dsn: str,
) -> None:
    base, stop = start(db_dsn, sample_every_s=0.2)
    svc = Service(db_dsn, base)
    holder = psycopg.connect(db_dsn)
    try:
        svc.sql("SELECT mbus.create_queue('stuck')")
        svc.sql("SELECT mbus.create_queue('mail')")
        svc.add_key("viewer", ["queues:read:*"])
        table = svc.value("SELECT mbus.generated_name('relation', 'table', 'stuck')")
        # a careless transaction left open with the queue's table locked (as a drop_queue,
        # clear_queue or an ALTER of the table would hold it until commit)
        holder.execute(
            sql.SQL("LOCK TABLE mbus.{} IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(table))
        )
        svc.sql("SELECT mbus.post('mail', '{}') FROM generate_series(1, 3)")
        with svc.client("viewer") as http:

            def mail_depth_is_three() -> bool:
                consumers = http.get("/v1/ops/series/queues/mail").json()["consumers"]
                return bool(consumers) and consumers[0]["points"][-1]["depth"] == 3

            wait_until(mail_depth_is_three, timeout=8)
            # the locked queue is left out of the samples meanwhile, not shown as empty
            last_mail = http.get("/v1/ops/series/queues/mail").json()["consumers"][0]
            stuck = http.get("/v1/ops/series/queues/stuck").json()["consumers"]
            stuck_ats = [p["at"] for c in stuck for p in c["points"]]
            assert all(at < last_mail["points"][-1]["at"] for at in stuck_ats)
    finally:
        holder.rollback()
        holder.close()
        stop()


def test_a_queue_whose_table_is_locked_does_not_stop_the_metrics_of_the_others(
    db_dsn: str,
) -> None:
    base, stop = start(db_dsn)
    svc = Service(db_dsn, base)
    holder = psycopg.connect(db_dsn)
    try:
        svc.sql("SELECT mbus.create_queue('stuck')")
        svc.sql("SELECT mbus.create_queue('mail')")
        table = svc.value("SELECT mbus.generated_name('relation', 'table', 'stuck')")
        holder.execute(
            sql.SQL("LOCK TABLE mbus.{} IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(table))
        )
        svc.sql("SELECT mbus.post('mail', '{}') FROM generate_series(1, 3)")
        with svc.client(None) as http:
            # a scrape answers (Prometheus would time out) and still shows the other queues
            body = http.get("/metrics", timeout=8).text
        assert "pgmbus_up 1.0" in body.splitlines()
        depths = [line for line in body.splitlines() if line.startswith("pgmbus_queue_depth{")]
        assert [line.rsplit(" ", 1)[1] for line in depths if 'queue="mail"' in line] == ["3.0"]
        assert not [line for line in depths if 'queue="stuck"' in line]  # left out, not 0
    finally:
        holder.rollback()
        holder.close()
        stop()
