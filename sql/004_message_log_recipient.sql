-- SPDX-License-Identifier: Apache-2.0
-- 004_message_log_recipient.sql - a recipient's messages, newest first.
--
-- Operators look a recipient's messages up ("my customer never got it"):
-- by address, newest first. The address is written once, so the in-place
-- (HOT) updates of a row's later events stay in place.
CREATE INDEX message_log_dst ON message_log (dst_addr, id) WHERE dst_addr IS NOT NULL;
