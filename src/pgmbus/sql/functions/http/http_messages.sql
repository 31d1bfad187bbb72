-- Function: mbus.http_messages(p_queue, p_state, p_consumer, p_priority, p_header, p_value, p_path, p_field, p_since, p_until, p_iid, p_after_id, p_after_c, p_after_dead, p_limit, p_scan)
--
-- Purpose:  One page of a queue's messages for the dashboard's browser, without locking or
--           leasing anything (a plain read): live deliveries of mbus.q_<queue> first, in (id,
--           consumer) order, then the queue's dead messages in dmq_id order; keyset paging
--           after (p_after_id, p_after_c), then after p_after_dead. A page reads at most p_scan
--           rows: when its filters leave fewer than p_limit, a last row of kind 'more' says
--           where the next page goes on. State: 'leased' while a lease token is set, 'delayed'
--           while vt is in the future, 'ready' otherwise.
-- Params:   p_queue       the queue
--           p_state       ready | delayed | leased | dead | all
--           p_consumer    only this consumer's deliveries and dead messages (NULL = all)
--           p_priority    only this priority (NULL = all)
--           p_header      a header name: only messages whose headers ->> p_header = p_value
--           p_value       the header's value (text)
--           p_path        a path into data (text[]): only messages whose data #>> p_path = p_field
--           p_field       the data field's value (text)
--           p_since       only messages added at or after this time (NULL = any)
--           p_until       only messages added before this time (NULL = any)
--           p_iid         only the message with this iid (NULL = any)
--           p_after_id    the last live row's message id of the previous page (NULL = start)
--           p_after_c     the last live row's consumer id of the previous page
--           p_after_dead  the last dead row's dmq_id of the previous page (NULL = none yet)
--           p_limit       the page size (1..1000)
--           p_scan        the most rows a page reads (>= p_limit; the iid search reads its
--                         index and is not bounded)
-- Returns:  table (kind, id, c, dmq_id, iid, consumer, state, priority, added, vt, expires,
--           attempts, reason, died_at, headers, data): kind 'live', 'dead' or 'more'; vt is NULL while
--           the delivery waits for consume_after (vt 'infinity', which no client type holds)
-- Locks:    none (reads only)
-- Calls:    mbus.generated_name, mbus.iid_id, mbus.require_consumer, mbus.require_queue
-- Tables:   mbus.consumer, mbus.dmq
-- Design:   docs/DESIGN.md#http_messages-bounded-pages-of-plain-reads
CREATE OR REPLACE FUNCTION mbus.http_messages(
    p_queue text, p_state text, p_consumer text, p_priority integer, p_header text,
    p_value text, p_path text[], p_field text, p_since timestamptz, p_until timestamptz,
    p_iid text, p_after_id bigint, p_after_c integer, p_after_dead bigint, p_limit integer,
    p_scan integer DEFAULT 10000)
RETURNS TABLE (kind text, id bigint, c integer, dmq_id bigint, iid text, consumer text,
               state text, priority smallint, added timestamptz, vt timestamptz,
               expires timestamptz, attempts integer, reason text, died_at timestamptz,
               headers jsonb, data jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cid  integer;
    v_id   bigint := mbus.iid_id(p_iid, p_queue);
    v_db   text := current_database();
    v_n    integer := 0;
    v_read integer := 0;
    v_hit  boolean;
    r      record;
BEGIN
    PERFORM mbus.require_queue(p_queue);
    IF p_state IS NULL OR p_state NOT IN ('ready', 'delayed', 'leased', 'dead', 'all') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('state must be ready, delayed, leased, dead or all, not %L', p_state);
    END IF;
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'limit must be between 1 and 1000';
    END IF;
    IF p_scan IS NULL OR p_scan < p_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'scan must be at least limit';
    END IF;
    IF p_consumer IS NOT NULL THEN
        PERFORM mbus.require_consumer(p_queue, p_consumer);
        SELECT x.cid INTO v_cid FROM mbus.consumer AS x
        WHERE x.qname = p_queue AND x.cname = p_consumer;
    END IF;
    IF p_state <> 'dead' AND p_after_dead IS NULL THEN
        -- the rows in page order, each with whether the filters hold (hit); the iid search is
        -- in the WHERE clause, where its index finds the message
        FOR id, c, iid, consumer, state, priority, added, vt, expires, attempts, headers, data,
            v_hit IN EXECUTE format($q$
            SELECT q.id, q.c, coalesce(q.iid, format('%%s.%%s@%%s', $14::text, q.id, $15::text))
                       AS iid, x.cname,
                   CASE WHEN q.lease_token IS NOT NULL THEN 'leased'
                        WHEN q.vt > clock_timestamp() THEN 'delayed'
                        ELSE 'ready' END AS state,
                   q.priority, q.added, nullif(q.vt, 'infinity') AS vt, q.expires, q.attempts,
                   q.headers, q.data,
                   ($3::integer IS NULL OR q.c = $3)
                   AND ($4::integer IS NULL OR q.priority = $4)
                   AND ($5::text IS NULL OR q.headers ->> $5 = $6)
                   AND ($7::text[] IS NULL OR q.data #>> $7 = $8)
                   AND ($9::timestamptz IS NULL OR q.added >= $9)
                   AND ($10::timestamptz IS NULL OR q.added < $10)
                   AND CASE $13::text
                       WHEN 'leased' THEN q.lease_token IS NOT NULL
                       WHEN 'delayed' THEN q.lease_token IS NULL AND q.vt > clock_timestamp()
                       WHEN 'ready' THEN q.lease_token IS NULL AND q.vt <= clock_timestamp()
                       ELSE true END AS hit
            FROM mbus.%I AS q JOIN mbus.consumer AS x ON x.cid = q.c
            WHERE q.id >= coalesce($1, 0) AND ($1 IS NULL OR (q.id, q.c) > ($1, $2))
              AND ($11::text IS NULL OR ($12::bigint IS NOT NULL AND q.id = $12 AND q.iid IS NULL)
                   OR ($12::bigint IS NULL AND q.iid = $11))
            ORDER BY q.id, q.c
            LIMIT $16$q$, mbus.generated_name('relation', 'table', p_queue))
        USING p_after_id, coalesce(p_after_c, 0), v_cid, p_priority, p_header, p_value, p_path,
              p_field, p_since, p_until, p_iid, v_id, p_state, p_queue, v_db,
              CASE WHEN p_iid IS NULL THEN p_scan END
        LOOP
            v_read := v_read + 1;
            IF v_hit THEN
                kind := 'live'; dmq_id := NULL; reason := NULL; died_at := NULL;
                RETURN NEXT;
                v_n := v_n + 1;
                IF v_n = p_limit THEN
                    RETURN;
                END IF;
            END IF;
            IF v_read = p_scan AND p_iid IS NULL THEN
                -- the page read all it may: the next one goes on after this row (id, c)
                kind := 'more'; dmq_id := NULL; consumer := NULL; state := NULL;
                priority := NULL; added := NULL; vt := NULL; expires := NULL; attempts := NULL;
                reason := NULL; died_at := NULL; headers := NULL; data := NULL;
                RETURN NEXT;
                RETURN;
            END IF;
        END LOOP;
        v_read := 0;
    END IF;
    IF p_state IN ('dead', 'all') THEN
        FOR r IN
            SELECT d.id, d.dmq_id, d.iid, d.cname, d.priority, d.added, d.expires, d.attempts,
                   d.reason, d.died_at, d.headers, d.data,
                   (p_consumer IS NULL OR d.cname = p_consumer)
                   AND (p_priority IS NULL OR d.priority = p_priority)
                   AND (p_header IS NULL OR d.headers ->> p_header = p_value)
                   AND (p_path IS NULL OR d.data #>> p_path = p_field)
                   AND (p_since IS NULL OR d.added >= p_since)
                   AND (p_until IS NULL OR d.added < p_until) AS hit
            FROM mbus.dmq AS d
            WHERE d.qname = p_queue AND d.dmq_id > coalesce(p_after_dead, 0)
              AND (p_iid IS NULL OR d.iid = p_iid)
            ORDER BY d.dmq_id
            LIMIT CASE WHEN p_iid IS NULL THEN p_scan END
        LOOP
            v_read := v_read + 1;
            IF r.hit THEN
                kind := 'dead'; id := r.id; c := NULL; dmq_id := r.dmq_id; iid := r.iid;
                consumer := r.cname; state := 'dead'; priority := r.priority;
                added := r.added; vt := NULL; expires := r.expires; attempts := r.attempts;
                reason := r.reason; died_at := r.died_at; headers := r.headers; data := r.data;
                RETURN NEXT;
                v_n := v_n + 1;
                IF v_n = p_limit THEN
                    RETURN;
                END IF;
            END IF;
            IF v_read = p_scan AND p_iid IS NULL THEN
                kind := 'more'; id := r.id; c := NULL; dmq_id := r.dmq_id; iid := r.iid;
                consumer := NULL; state := NULL; priority := NULL; added := NULL; vt := NULL;
                expires := NULL; attempts := NULL; reason := NULL; died_at := NULL;
                headers := NULL; data := NULL;
                RETURN NEXT;
                RETURN;
            END IF;
        END LOOP;
    END IF;
END;
$$;
