-- SPDX-License-Identifier: Apache-2.0
-- 001_init.sql - the first schema of emg's database: the message log, the
-- message states, the shared id sequence, the nodes and the receipt hand-off
-- between nodes.
--
-- Applied by `emgd --init-db` (server/db/db.c, db_init_schema) inside one
-- transaction, under an advisory lock, and recorded in schema_migrations;
-- so it holds no BEGIN/COMMIT of its own and nothing that cannot run in a
-- transaction block (no CREATE INDEX CONCURRENTLY).

CREATE TABLE schema_migrations (
  version     integer PRIMARY KEY,
  name        text NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now()
);

-- The states a message goes through. 1..8 are SMPP's message_state values
-- (the ones receipts carry); 0 is the gateway's own "accepted, not yet sent".
-- A state >= 2 is final.
CREATE TABLE message_states (
  code   smallint PRIMARY KEY,
  name   text NOT NULL UNIQUE,
  final  boolean NOT NULL
);
INSERT INTO message_states (code, name, final) VALUES
  (0, 'QUEUED', false),
  (1, 'ENROUTE', false),
  (2, 'DELIVERED', true),
  (3, 'EXPIRED', true),
  (4, 'DELETED', true),
  (5, 'UNDELIVERABLE', true),
  (6, 'ACCEPTED', true),
  (7, 'UNKNOWN', true),
  (8, 'REJECTED', true);

-- The message log ("route log"): one row per message (per part of a
-- concatenated message, which has its own id), written by the log writer
-- of every node in batches. A row is built up from several events
-- (accepted, sent, receipt) that may arrive in any order and more than
-- once (a batch replayed after a lost connection, a spill file drained
-- again), so every column merges as a lattice and a replay changes nothing:
--   * the accepted columns are written once;
--   * target_connector, smsc_id and sent_at come from the highest attempt;
--   * state, state_at, error_code and final_at from the highest
--     (final, state_at, state): a final state is never undone by a late
--     intermediate one, and among equals the later one wins;
--   * receipt_state, receipt_at and done_at likewise by
--     (final, receipt_at, receipt_state).
-- State codes are not a foreign key to message_states: the check costs a
-- trigger per row on the hot path; the CHECK keeps them in range.
CREATE TABLE message_log (
  id                bigint PRIMARY KEY,      -- node_id << 48 | sequence
  node_id           integer NOT NULL,        -- the node that accepted it (id >> 48)
  received_at       timestamptz,
  origin_connector  text,
  origin_user       text,
  origin_ref        text,                    -- the id the client got in its submit response
  src_addr          text,
  src_ton           smallint,
  src_npi           smallint,
  dst_addr          text,
  dst_ton           smallint,
  dst_npi           smallint,
  dlr_mask          smallint,                -- receipts the origin asked for (MSG_DLR_*)
  segment_ref       integer,                 -- concatenation: reference, part, parts
  segment_seq       smallint,
  segment_count     smallint,
  attempts          smallint NOT NULL DEFAULT 0,
  target_connector  text,
  smsc_id           text,                    -- normalised, as the DLR table keys it
  sent_at           timestamptz,
  state             smallint NOT NULL DEFAULT 0 CHECK (state BETWEEN 0 AND 8),
  state_at          timestamptz,
  error_code        integer,
  final_at          timestamptz,
  receipt_state     smallint CHECK (receipt_state BETWEEN 0 AND 8),
  receipt_at        timestamptz,             -- when the gateway got the receipt
  done_at           timestamptz              -- the receipt's done date (the SMSC's clock)
) WITH (fillfactor = 50);                     -- room on the page for the in-place (HOT) updates of later events

-- A receipt that reaches another node is matched by its SMSC id on the
-- connector that sent the message, the newest message first (an SMSC may
-- reuse its ids after a while).
CREATE INDEX message_log_smsc ON message_log (target_connector, smsc_id, id) WHERE smsc_id IS NOT NULL;

-- The message log for people: state names next to the codes.
CREATE VIEW message_log_named AS
  SELECT l.*, s.name AS state_name, r.name AS receipt_state_name
    FROM message_log l
    JOIN message_states s ON s.code = l.state
    LEFT JOIN message_states r ON r.code = l.receipt_state;

-- Message ids: the low 48 bits of every id come from this sequence when a
-- database is configured, so that no two nodes (nor one node after losing
-- its spool) ever hand out the same sequence number. A node takes a block
-- of ids at a time through emg_id_block.
CREATE SEQUENCE message_id_seq MINVALUE 1 MAXVALUE 281474976710655 NO CYCLE;

-- Takes `want` consecutive ids, the first not below `at_least` (a node's own
-- high-water mark, so that ids it handed out while the database was away are
-- never given again). Returns the first. Every caller takes the same
-- transaction lock, so the nextval/setval pair cannot interleave with
-- another caller's and the sequence never moves backwards.
CREATE FUNCTION emg_id_block(want bigint, at_least bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  first bigint;
BEGIN
  IF want < 1 THEN
    RAISE EXCEPTION 'emg_id_block: want must be at least 1, not %', want;
  END IF;
  PERFORM pg_advisory_xact_lock(6647143, 2);
  first := nextval('message_id_seq');
  IF first < at_least THEN
    first := at_least;
  END IF;
  PERFORM setval('message_id_seq', first + want - 1);
  RETURN first;
END
$$;

-- The gateways sharing this database, with their heartbeat.
CREATE TABLE nodes (
  node_id     integer PRIMARY KEY CHECK (node_id BETWEEN 1 AND 65535),
  name        text NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  last_seen   timestamptz NOT NULL DEFAULT now()
);

-- Receipts one node resolved for a message that another node accepted, and
-- whose origin account is not bound to the resolving node: the origin node
-- claims them (DELETE ... RETURNING, in the transaction that queues them)
-- and delivers them to its client.
CREATE TABLE receipt_handoff (
  seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  to_node           integer NOT NULL,
  from_node         integer NOT NULL,
  msg_id            bigint NOT NULL,
  origin_connector  text NOT NULL,
  origin_user       text NOT NULL,
  target_connector  text NOT NULL,           -- where the message was sent, and its SMSC id:
  smsc_id           text NOT NULL,           -- the origin node's DLR table entry
  receipt_id        text NOT NULL,           -- the origin's ref: what the receipt carries to the client
  state             smallint NOT NULL CHECK (state BETWEEN 0 AND 8),
  error_code        integer NOT NULL DEFAULT 0,
  submit_time       bigint NOT NULL DEFAULT 0,  -- Unix seconds, as in struct msg_receipt
  done_time         bigint NOT NULL DEFAULT 0,
  src_addr          text NOT NULL,
  src_ton           smallint NOT NULL,
  src_npi           smallint NOT NULL,
  dst_addr          text NOT NULL,
  dst_ton           smallint NOT NULL,
  dst_npi           smallint NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX receipt_handoff_to_node ON receipt_handoff (to_node, seq);
