-- SPDX-License-Identifier: Apache-2.0
-- 003_accounts.sql - accounts changed while emgd runs, shared by every node
-- of one database (the admin API's /api/accounts and emgctl account).
--
-- settings: the account as POST /api/accounts takes it, with password_hash
-- only (never a cleartext password) and without credit. version: from one
-- sequence, new on every change of settings (a name deleted and added again
-- gets a new one), so that each node sees which rows it must read again.
-- credit: the parts left over all nodes (NULL: no limit). Each node takes
-- parts locally and pushes what it took every 200 ms in one statement;
-- account_credit_pushed records, per node, the last credit epoch pushed, so
-- that a node restarted after a crash pushes what its journal holds beyond
-- it, and nothing twice.
CREATE SEQUENCE account_version_seq;

CREATE TABLE accounts (
  name text PRIMARY KEY,
  settings jsonb NOT NULL,
  credit bigint,
  version bigint NOT NULL DEFAULT nextval('account_version_seq'),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE account_credit_pushed (
  name text NOT NULL REFERENCES accounts (name) ON DELETE CASCADE,
  node_id integer NOT NULL,
  epoch bigint NOT NULL,
  PRIMARY KEY (name, node_id)
);
