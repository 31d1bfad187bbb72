"""Conditions that are not the owner's run in a sandbox: the role ``mbus_condition``.

The restricted grammar keeps an HTTP key's or a SQL role's condition to the event and the
subscription. These tests suppose the grammar had a hole: the conditions go straight into
``mbus.subscriptions`` (as a grammar that let them through would store them) and the group is
read by a superuser, the most a reader can give away. They must still read no table, no
superuser-only setting and no file, while the group's other subscriptions, other groups and
the owner's full-language conditions match as before.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql

from pgmbus import schema, streams

VICTIM_SIGNING = "s3c" + "-victim-client-signing-value-of-32-bytes"
# what a condition could read with the reader's rights: a table, a setting, a file
ESCAPES = {
    "table": "EXISTS (SELECT 1 FROM mbus.timer_clients AS c "
    "WHERE c.signing_secret LIKE e.topic || '%')",
    "setting": "current_setting('data_directory') LIKE '/%' AND e.topic <> ''",
    "file": "length(pg_read_file('PG_VERSION')) > 0 AND e.topic <> ''",
}
ROOM = "s.params @> jsonb_build_object('room', e.payload->'room')"


@pytest.fixture
def owner(db_dsn: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert superuser.fetchone() == (True,)  # the most a reader can give a condition
        conn.execute(
            "INSERT INTO mbus.timer_clients (name, key_hash, signing_secret) VALUES (%s, %s, %s)",
            ("victim", hashlib.sha256(b"victim-key").digest(), VICTIM_SIGNING),
        )
        streams.create_group(conn, "chat", start="now")
        streams.create_group(conn, "audit", start="now")
        yield conn


def _insert(conn: psycopg.Connection[tuple[object, ...]], group: str, condition: str) -> int:
    """Store a condition as a grammar with a hole would: no check, the table's defaults."""
    row = conn.execute(
        "INSERT INTO mbus.subscriptions (group_name, condition) VALUES (%s, %s) RETURNING id",
        (group, condition),
    ).fetchone()
    assert row is not None
    return int(str(row[0]))


def _matched(conn: psycopg.Connection[tuple[object, ...]], group: str) -> dict[int, set[str]]:
    """subscription id -> the topics of the events it was given, reading the group to its end."""
    got: dict[int, set[str]] = {}
    with conn.transaction():
        rows = conn.execute(
            "SELECT topic, subscription_ids FROM mbus.read_subscriptions(%s)", (group,)
        ).fetchall()
    for topic, ids in rows:
        assert isinstance(ids, list)
        for sid in ids:
            got.setdefault(int(sid), set()).add(str(topic))
    return got


def test_a_condition_past_the_grammar_cannot_read_a_table_a_setting_or_a_file(
    owner: psycopg.Connection[tuple[object, ...]],
) -> None:
    escapes = {what: _insert(owner, "chat", cond) for what, cond in ESCAPES.items()}
    room = streams.subscribe(owner, "chat", ROOM, {"room": 7})
    owner.execute("SELECT mbus.subscribe_restricted('chat', %s, %s)", (ROOM, '{"room": 8}'))
    audit = _insert(owner, "audit", "e.topic LIKE 's3c%'")
    for topic, room_no in (("s3c", 7), ("zzz", 8)):
        streams.publish(owner, topic, {"room": room_no})

    got = _matched(owner, "chat")
    for what, sid in escapes.items():
        assert sid not in got, f"the {what} condition matched: it read past the sandbox"
    assert got[room] == {"s3c"}
    assert len(got) == 2 and {"zzz"} in got.values()
    failed = owner.execute(
        "SELECT value FROM mbus.stream_counters WHERE name = 'subscription_errors'"
    ).fetchone()
    assert failed is not None and int(str(failed[0])) >= len(ESCAPES)
    assert _matched(owner, "audit") == {audit: {"s3c"}}


def test_a_condition_on_the_hash_joined_path_is_still_sandboxed(
    owner: psycopg.Connection[tuple[object, ...]],
) -> None:
    """A leading key equality makes the sandbox hash-join the batch: the rest still runs there."""
    leads = ("s.params @> jsonb_build_object('room', e.topic)", "s.params->>'room' = e.topic")
    escapes = {}
    for lead in leads:
        for what, cond in ESCAPES.items():
            row = owner.execute(
                "INSERT INTO mbus.subscriptions (group_name, condition, params)"
                " VALUES ('chat', %s, '{\"room\": \"s3c\"}') RETURNING id",
                (f"{lead} AND {cond}",),
            ).fetchone()
            assert row is not None
            escapes[f"{lead}: {what}"] = int(str(row[0]))
    plain = owner.execute(
        "SELECT mbus.subscribe_restricted('chat', %s, '{\"room\": \"s3c\"}')", (leads[1],)
    ).fetchone()
    assert plain is not None
    streams.publish(owner, "s3c", {})
    streams.publish(owner, "zzz", {})

    got = _matched(owner, "chat")
    for what, sid in escapes.items():
        assert sid not in got, f"{what} matched: it read past the sandbox"
    assert got == {int(str(plain[0])): {"s3c"}}


def test_the_sandbox_role_holds_no_privilege_and_runs_the_matcher(
    owner: psycopg.Connection[tuple[object, ...]],
) -> None:
    row = owner.execute(
        "SELECT r.rolcanlogin, r.rolsuper,"
        "       has_schema_privilege(r.oid, 'mbus', 'USAGE'),"
        "       has_table_privilege(r.oid, 'mbus.timer_clients', 'SELECT'),"
        "       has_function_privilege(r.oid, 'pg_read_file(text)', 'EXECUTE'),"
        "       p.proowner = r.oid, p.prosecdef"
        " FROM pg_roles AS r, pg_proc AS p"
        " WHERE r.rolname = 'mbus_condition' AND p.oid = 'mbus._match_sandboxed'::regproc"
    ).fetchone()
    assert row == (False, False, False, False, False, True, True)


def test_the_owners_full_conditions_still_run_with_the_readers_role(
    owner: psycopg.Connection[tuple[object, ...]],
) -> None:
    full = streams.subscribe(owner, "chat", "current_setting('data_directory') LIKE '/%'")
    http = owner.execute(
        "SELECT mbus.subscribe_restricted('chat', 'e.topic IS NOT NULL')"
    ).fetchone()
    assert http is not None
    streams.publish(owner, "t", {})
    assert _matched(owner, "chat") == {full: {"t"}, int(str(http[0])): {"t"}}
    kinds = owner.execute(
        "SELECT array_agg(full_language ORDER BY id) FROM mbus.subscriptions"
    ).fetchone()
    assert kinds == ([True, False],)


def test_a_reader_that_may_not_run_the_sandbox_is_told_so_not_given_nothing(
    owner: psycopg.Connection[tuple[object, ...]],
) -> None:
    role = f"reader_{uuid.uuid4().hex[:8]}"
    sandbox = sql.SQL("mbus._match_sandboxed(text, mbus.stream_row[], mbus.subscriptions[])")
    owner.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
    try:
        for grant in (
            "GRANT USAGE ON SCHEMA mbus TO {}",
            "GRANT ALL ON ALL TABLES IN SCHEMA mbus TO {}",
            "GRANT ALL ON ALL SEQUENCES IN SCHEMA mbus TO {}",
            "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA mbus TO {}",
        ):
            owner.execute(sql.SQL(grant).format(sql.Identifier(role)))
        revoke = sql.SQL("REVOKE EXECUTE ON FUNCTION {} FROM {}")
        owner.execute(revoke.format(sandbox, sql.Identifier(role)))
        owner.execute("SELECT mbus.subscribe_restricted('chat', %s, %s)", (ROOM, '{"room": 1}'))
        streams.publish(owner, "t", {"room": 1})
        with owner.transaction(force_rollback=True):
            owner.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="_match_sandboxed"):
                owner.execute("SELECT * FROM mbus.read_subscriptions('chat')")
        allow = sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}")
        owner.execute(allow.format(sandbox, sql.Identifier(role)))
        with owner.transaction(force_rollback=True):
            owner.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
            rows = owner.execute("SELECT topic FROM mbus.read_subscriptions('chat')").fetchall()
        assert rows == [("t",)]
    finally:
        owner.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        owner.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.mark.parametrize("createrole", [True, False])
def test_an_installer_that_is_no_superuser_gets_the_sandbox_with_createrole_only(
    make_db: Callable[..., str], createrole: bool
) -> None:
    dsn = make_db(installed=False)
    role = f"installer_{uuid.uuid4().hex[:8]}"
    attrs = sql.SQL("LOGIN CREATEROLE" if createrole else "LOGIN")
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} {}").format(sql.Identifier(role), attrs))
        db = admin.execute("SELECT current_database()").fetchone()
        assert db is not None
        admin.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(str(db[0])), sql.Identifier(role)
            )
        )
        admin.execute(sql.SQL("GRANT ALL ON SCHEMA public TO {}").format(sql.Identifier(role)))
    notices: list[str] = []
    try:
        with psycopg.connect(dsn.replace("user=postgres", f"user={role}")) as conn:
            conn.add_notice_handler(lambda d: notices.append(str(d.message_primary)))
            schema.install(conn)
            conn.autocommit = True  # a read sees committed events only
            row = conn.execute(
                "SELECT pg_get_userbyid(p.proowner), p.prosecdef FROM pg_proc AS p"
                " WHERE p.oid = 'mbus._match_sandboxed'::regproc"
            ).fetchone()
            if createrole:
                assert row == ("mbus_condition", True)
            else:  # the reader's role, as before, and the installer is told
                assert row == (role, False)
                assert any("mbus_condition" in n for n in notices), notices
            conn.execute("SELECT mbus.create_group('chat', start => 'now')")
            conn.execute("SELECT mbus.subscribe_restricted('chat', %s, %s)", (ROOM, '{"room": 1}'))
            conn.execute("SELECT mbus.publish('t', '{\"room\": 1}')")
            got = conn.execute("SELECT topic FROM mbus.read_subscriptions('chat')").fetchall()
            assert got == [("t",)]
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            for drop in (
                "REASSIGN OWNED BY {} TO CURRENT_USER",
                "DROP OWNED BY {}",
                "DROP ROLE {}",
            ):
                admin.execute(sql.SQL(drop).format(sql.Identifier(role)))
