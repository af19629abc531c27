-- SPDX-License-Identifier: Apache-2.0
-- 002_handoff_dlr_mask.sql - a receipt handed to another node carries the
-- receipts the client asked for (the message's dlr_mask, MSG_DLR_*), so that
-- the origin node passes on only those states. Without it, a node that had
-- lost its own DLR entry passed every state on.
--
-- Rows queued by a node still on schema 1 get 7 (every state), which is
-- what such rows meant.
ALTER TABLE receipt_handoff
  ADD COLUMN dlr_mask smallint NOT NULL DEFAULT 7 CHECK (dlr_mask BETWEEN 0 AND 7);
