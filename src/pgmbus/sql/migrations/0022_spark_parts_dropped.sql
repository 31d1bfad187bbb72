-- The cursor parts mbus.spark_read folded into constants (_spark_lo, _spark_hi,
-- _spark_after_txid, _spark_after_id, _spark_xip, _spark_top, _spark_bottom) are gone: the range
-- of a read between two cursors has one home, mbus._between, which spark_read, read_between and
-- read_listeners inline (issue 14: a cut inside a huge transaction reads only its own part).
DROP FUNCTION IF EXISTS mbus._spark_lo(text);
DROP FUNCTION IF EXISTS mbus._spark_hi(text);
DROP FUNCTION IF EXISTS mbus._spark_after_txid(text);
DROP FUNCTION IF EXISTS mbus._spark_after_id(text);
DROP FUNCTION IF EXISTS mbus._spark_xip(text);
DROP FUNCTION IF EXISTS mbus._spark_top(text);
DROP FUNCTION IF EXISTS mbus._spark_bottom(text);
