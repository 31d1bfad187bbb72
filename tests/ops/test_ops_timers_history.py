"""The operators' view of a callback's history (typed store values served as JSON)."""

from __future__ import annotations

from tests.ops.conftest import Service


def test_history_of_another_clients_callback_is_served_as_json(service: Service) -> None:
    client_id = service.value("SELECT client_id FROM mbus.timer_add_client('shop')")
    service.sql(
        "SELECT mbus.timer_create(%s, 'orders', '42', now() + interval '1 hour',"
        " 'https://shop.example/hook', '{\"order\": 42}')",
        (client_id,),
    )
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


def test_a_page_of_callbacks_holds_the_keys_own_not_others_cut_by_the_limit(
    service: Service,
) -> None:
    """Main: the LIMIT came before the filter by scope: bob's page of 1 was [] when alice had a
    newer callback; schedules the same."""
    bob, bob_key = service.sql("SELECT client_id, api_key FROM mbus.timer_add_client('bob')")[0]
    service.keys["bob"] = str(bob_key)
    alice = service.value("SELECT client_id FROM mbus.timer_add_client('alice')")
    service.sql("SELECT mbus.api_set_scopes('bob', ARRAY['queues:read:*'])")
    for client, key in ((bob, "b1"), (alice, "a1"), (alice, "a2")):
        service.sql(
            "SELECT mbus.timer_create(%s, 'g', %s, now() + interval '1 hour', "
            "'https://shop.example/hook')",
            (client, key),
        )
        service.sql(
            "SELECT mbus.timer_schedule_create(%s, %s, 'https://shop.example/tick', "
            "p_interval_s => 60)",
            (client, key),
        )
    with service.client("bob") as c:
        page = c.get("/v1/ops/callbacks", params={"limit": 1}).json()
        assert [r["callback"]["event_key"] for r in page] == ["b1"]
        page = c.get("/v1/ops/schedules", params={"limit": 1}).json()
        assert [r["schedule"]["schedule_key"] for r in page] == ["b1"]
