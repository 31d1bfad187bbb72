-- Function: mbus.with_consume_after(headers, consume_after)
--
-- Purpose:  The headers of a post given the seed's named parameter consume_after (post_<q>(...,
--           consume_after := array[iid1, iid2]) or consume_after := iid): headers.consume_after
--           becomes the union of what the headers had and the parameter's iids. The parameter is
--           checked like headers.consume_after (mbus.dep_list: an iid or an array of iids).
-- Params:   headers        the post's headers (jsonb object or NULL)
--           consume_after  the parameter as jsonb (to_jsonb of a text or text[]; NULL = none)
-- Returns:  jsonb: the headers with consume_after set (NULL when both are NULL); MB005 when
--           consume_after is neither an iid nor an array of iids, or names an empty or
--           longer than 200 bytes iid
-- Locks:    none
-- Calls:    mbus.dep_list
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.with_consume_after(headers jsonb, consume_after jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_deps text[];
BEGIN
    IF jsonb_typeof(consume_after) NOT IN ('string', 'array', 'null')
       OR jsonb_typeof(consume_after) = 'array'
          AND EXISTS (SELECT 1 FROM jsonb_array_elements(consume_after) AS e(v)
                      WHERE jsonb_typeof(e.v) <> 'string') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = 'consume_after must be an iid (text) or an array of iids (text[])';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE jsonb_typeof(consume_after)
                   WHEN 'array' THEN consume_after ELSE jsonb_build_array(consume_after) END)
                   AS e(v)
               WHERE e.v = '' OR octet_length(e.v) > 200) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = 'every consume_after iid must be a non-empty text of at most 200 bytes';
    END IF;
    v_deps := mbus.dep_list(consume_after);
    IF v_deps IS NULL THEN
        RETURN headers;
    END IF;
    IF headers IS NOT NULL AND jsonb_typeof(headers) = 'object' AND headers ? 'consume_after' THEN
        v_deps := v_deps || coalesce(mbus.dep_list(headers -> 'consume_after'), '{}');
    END IF;
    RETURN coalesce(headers, '{}') || jsonb_build_object(
        'consume_after', to_jsonb(ARRAY(SELECT DISTINCT d FROM unnest(v_deps) AS d ORDER BY d)));
END;
$$;
