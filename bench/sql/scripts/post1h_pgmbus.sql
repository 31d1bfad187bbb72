-- post 1 message with headers per transaction: pgmbus (stamped with seenby, source_db, ...)
SELECT mbus.post_bench(:payload::jsonb, '{"trace": "4bf92f3577b34da6", "seenby": ["far"]}'::jsonb);
