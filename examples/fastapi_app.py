"""FastAPI on pgmbus: an order is saved and its message posted in the request's transaction.

Run it: ``PGMBUS_DSN=... uvicorn examples.fastapi_app:app`` (the mbus schema installed, the queue
``orders`` created, the table below present; ``setup`` does both). ``POST /orders`` commits the
row and the message together; ``POST /orders?fail=true`` raises after posting, so neither stays.
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from pgmbus import schema
from pgmbus.contrib.fastapi import Bus, Transaction, lifespan
from pgmbus.queues import Bus as SyncBus

app = FastAPI(lifespan=lifespan(os.environ.get("PGMBUS_DSN"), max_size=4))


class Order(BaseModel):
    item: str
    quantity: int = 1


class PaymentDeclined(Exception):
    """The example's failure after the post."""


@app.exception_handler(PaymentDeclined)
async def declined(request: Request, exc: PaymentDeclined) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=402)


def setup(dsn: str) -> None:
    """Install the schema, create the ``orders`` queue and table."""
    with psycopg.connect(dsn) as conn:
        schema.install(conn)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS orders (id bigserial PRIMARY KEY, item text NOT NULL,"
            " quantity int NOT NULL)"
        )
        conn.commit()
    with SyncBus(dsn) as bus:
        bus.create_queue("orders")


@app.post("/orders", status_code=201)
async def place_order(order: Order, conn: Transaction, bus: Bus, fail: bool = False) -> Any:
    cur = await conn.execute(
        "INSERT INTO orders (item, quantity) VALUES (%s, %s) RETURNING id",
        (order.item, order.quantity),
    )
    row = await cur.fetchone()
    assert row is not None
    iid = await bus.post("orders", {"order": row[0], **order.model_dump()}, conn=conn)
    if fail:
        raise PaymentDeclined("payment declined after the post: the transaction rolls back")
    return {"order": row[0], "message": iid}
