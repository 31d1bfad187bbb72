"""The operators' view of a callback's history (typed store values served as JSON)."""

from __future__ import annotations

from tests.ops.conftest import Service


def test_history_of_another_clients_callback_is_served_as_json(service: Service) -> None:
    client_id = service.value("SELECT client_id FROM mbus.timer_add_client('shop')")
    service.sql("SELECT mbus.timer_create(%s, 'orders', '42', now() + interval '1 hour',"
                " 'https://shop.example/hook', '{\"order\": 42}')", (client_id,))
    service.sql("SELECT mbus.timer_cancel(%s, 'orders', '42')", (client_id,))
    with service.client() as c:
        r = c.get("/v1/ops/callbacks/shop/orders/42/history")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["callback"]["status"] == "cancelled"
        assert body["callback"]["context"] == {"order": 42}
        assert body["callback"]["retry"]["fast_retries"] == 2
        assert [ch["action"] for ch in body["changes"]] == ["create", "cancel"]
        assert body["changes"][1]["old_status"] == "pending"
        assert body["attempts"] == []
        assert c.get("/v1/ops/callbacks/shop/orders/nope/history").status_code == 404
