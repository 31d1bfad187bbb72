-- read the next 1,000 events and commit the group's cursor, one transaction: pgmbus
BEGIN;
SELECT cursor, id, payload FROM mbus.read_next('bench', 1000) \aset got_
SELECT mbus.commit('bench', :got_cursor);
COMMIT;
