-- Function: mbus.expire_publish_keys(p_now, p_limit)
--
-- Purpose:  Forget idempotency keys published longer ago than streams.idempotency_window:
--           delete their rows of mbus.stream_publish_keys (mbus.publish_once already treats
--           such a row as absent; this gives the space back). Rows another transaction holds
--           are skipped.
-- Params:   p_now    the clock (NULL = now()); tests move it
--           p_limit  at most this many rows (NULL = all)
-- Returns:  bigint: the rows deleted
-- Locks:    row locks of the rows it deletes (FOR UPDATE SKIP LOCKED: never waits)
-- Calls:    mbus.get_setting, mbus.given_clock
-- Tables:   mbus.stream_publish_keys
CREATE OR REPLACE FUNCTION mbus.expire_publish_keys(p_now timestamptz DEFAULT NULL,
                                                    p_limit integer DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_before timestamptz := coalesce(mbus.given_clock(p_now), now())
                            - (mbus.get_setting('streams.idempotency_window', '"24 hours"')
                               #>> '{}')::interval;
    v_count  bigint;
BEGIN
    DELETE FROM mbus.stream_publish_keys AS pk
    WHERE pk.ctid = ANY (ARRAY(
        SELECT x.ctid FROM mbus.stream_publish_keys AS x
        WHERE x.published_at <= v_before
        LIMIT p_limit FOR UPDATE SKIP LOCKED));
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$$;
