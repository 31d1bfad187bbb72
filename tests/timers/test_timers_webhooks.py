"""Callbacks verify with the Standard Webhooks library, and each call says which call it is."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from pgmbus.timers.delivery import sign, signing_key
from tests.timers.conftest import Env, Reply, ScriptedServer
from tests.timers.test_timers_dispatcher import add, all_finished, dispatch_until, status_of

Server = Callable[..., ScriptedServer]


def test_whsec_secrets_are_base64_decoded_as_the_key() -> None:
    raw = bytes(range(32))
    secret = "whsec_" + base64.b64encode(raw).decode()
    assert signing_key(secret) == raw
    assert signing_key(secret.rstrip("=")) == raw  # unpadded, as the library accepts
    assert signing_key("plain") == b"plain"
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    ours = sign(secret, "msg_1", int(at.timestamp()), b'{"a":1}')
    assert ours == Webhook(secret).sign("msg_1", at, '{"a":1}')


def test_a_real_callback_verifies_with_standardwebhooks(env: Env, http_server: Server) -> None:
    server = http_server([Reply(503), Reply(503)])
    add(env, "e", server.url + "/hook", retry={"fast_retries": 2}, context={"order": 7})
    dispatch_until(env, all_finished(env))
    assert status_of(env, "e") == "notified"
    got = server.received
    assert len(got) == 3
    webhook = Webhook(env.client.signing_secret)  # the secret exactly as add-client printed it
    for number, request in enumerate(got, start=1):
        payload = webhook.verify(request.body, request.headers)
        assert payload["context"] == {"order": 7}
        assert (payload["attempt"], payload["call"]) == (1, number)
        assert request.headers["pgmbus-call"] == str(number)
    tampered = json.loads(got[0].body)
    tampered["context"] = {"order": 8}
    with pytest.raises(WebhookVerificationError):
        webhook.verify(json.dumps(tampered).encode(), got[0].headers)
