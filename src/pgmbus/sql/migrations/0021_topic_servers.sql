-- a topic's server list can change after placement (issue 17, scale-out):
--   * mbus.placement.scheme: how a key picks its server. 'rendezvous' (new topics): the server
--     with the highest hash of (server name, key), so adding a server moves only the keys that
--     now prefer it and removing one moves only its own keys. 'mod' (topics placed before this
--     migration): crc32(key) mod the number of servers, which moves most keys on any change,
--     so such a topic's list cannot change (unplace and place it again when it is empty);
--   * previous and changing_since: a change under way (mbus.change_topic_servers, finished by
--     mbus.finish_topic_change). Publishers use the new list at once; readers that follow the
--     map hold back the servers gaining keys until every group on the servers losing keys has
--     read past the change's fence (pgmbus.scaleout.topics), so a key's events are read in order.

ALTER TABLE mbus.placement
    ADD COLUMN scheme text NOT NULL DEFAULT 'rendezvous' CHECK (scheme IN ('mod', 'rendezvous')),
    ADD COLUMN previous text[],
    ADD COLUMN changing_since timestamptz,
    ADD CONSTRAINT placement_change_check
        CHECK ((previous IS NULL) = (changing_since IS NULL) AND (previous IS NULL OR kind = 'topic'));

UPDATE mbus.placement SET scheme = 'mod' WHERE kind = 'topic';

COMMENT ON COLUMN mbus.placement.scheme IS
    'How a topic key picks its server: rendezvous (highest hash of server and key) or mod.';
COMMENT ON COLUMN mbus.placement.previous IS
    'The servers before a change of a topic''s list that is under way (NULL: none).';
