/* dlr.h - the DLR table: which message a receipt from an SMSC is about.
 *
 * When an out connector's submit is answered, it records (connector, SMSC
 * message id) -> what the receipt needs to reach the message's origin.
 * When the receipt comes, the entry is looked up (and removed once the state
 * is final). The table holds dlr_table_size entries: when it is full the
 * oldest is evicted (counted); entries past their TTL expire.
 *
 * Thread-safe: out connector instances insert and look up concurrently
 * (the table is sharded, one lock per shard). A large table is split into
 * up to 64 shards by key hash; the table holds dlr_table_size entries
 * however they fall, but a full table evicts the oldest entry of the new
 * key's shard: "oldest" is exact within a shard and approximate over the
 * table. Tables below 8192 entries have one shard.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_DLR_H
#define EMG_DLR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "msg.h"

/* Longest normalised SMSC id, NUL included: an id of 64 hex digits is a
 * decimal number of up to 78 digits. */
#define DLR_ID_LEN 79

/* What a receipt needs to reach its origin. */
struct dlr_info {
  uint64_t msg_id;
  uint16_t origin_connector;
  uint8_t dlr_mask;                /* MSG_DLR_*: which receipts the origin wants */
  uint8_t part_seq, part_total;    /* a part of a concatenated message: which of how many; 0 = not */
  int64_t submit_time;             /* Unix seconds */
  char origin_user[MSG_USER_LEN];
  char origin_ref[MSG_ID_LEN];     /* the id the origin knows the message by */
  struct msg_addr src;             /* the original sender and recipient */
  struct msg_addr dst;
  uint8_t callback_method;         /* HTTP origins: enum msg_callback_method */
  char callback[MSG_CALLBACK_LEN]; /* the receipt callback URL; "" = none */
};

/* What the table keeps of message m for its receipt. */
void dlr_info_from_msg(struct dlr_info *info, const struct msg *m);

struct dlr_stats {
  size_t size;                     /* capacity */
  size_t used;
  uint64_t inserted, matched, unmatched, evicted, expired, replaced;
};

struct dlrtab;

/* size: the capacity in entries. ttl_s: how long an entry waits for its
 * final receipt; 0 keeps entries until matched or evicted. NULL when size is
 * 0 or out of memory. */
struct dlrtab *dlrtab_create(size_t size, uint32_t ttl_s);
void dlrtab_destroy(struct dlrtab *t);

/* Told of the messages whose entries the table dropped before their
 * final receipt came: evicted by a full table, replaced by a newer entry
 * with the same key, or past the TTL. Called without the table's locks, on
 * the thread that inserted or expired. */
enum dlr_drop {
  DLR_DROP_EVICTED,                /* the table was full: the oldest entry made way */
  DLR_DROP_REPLACED,               /* another message got the same SMSC id on the same connector */
  DLR_DROP_EXPIRED                 /* no final receipt within the TTL */
};
struct dlr_dropped {
  uint64_t msg_id;
  uint16_t out_connector;          /* the connector it was sent on */
};
typedef void dlrtab_drop_fn(void *arg, const struct dlr_dropped *d, size_t n, enum dlr_drop why);

/* Sets the drop handler (NULL: none). Not safe against concurrent inserts:
 * set it before the table is shared, or while nothing inserts. */
void dlrtab_on_drop(struct dlrtab *t, dlrtab_drop_fn *fn, void *arg);

/* Records smsc_id (already normalised, see dlr_id_normalize) on connector
 * out_connector. An existing entry with the same key is replaced (counted).
 * When the table is full the oldest entry goes (counted). now: Unix seconds.
 * The strings of info are copied (each up to its array's size - 1).
 * Returns 0, or -1 when smsc_id is empty or longer than DLR_ID_LEN - 1, or
 * when out of memory (then the entry, and one it replaced, is not kept). */
int dlrtab_insert(struct dlrtab *t, uint16_t out_connector, const char *smsc_id,
                  const struct dlr_info *info, int64_t now);

/* Looks up the entry for a receipt; fills *info and returns 1 when found
 * (removing the entry when remove is true: the receipt was final), 0 when
 * not (counted as unmatched; so is an empty or overlong smsc_id). Lookups
 * that find the entry count as matched whether or not they remove it. */
int dlrtab_lookup(struct dlrtab *t, uint16_t out_connector, const char *smsc_id, bool remove,
                  struct dlr_info *info);

/* Removes entries recorded more than ttl_s seconds before now (oldest
 * first: the age order is the insertion order); returns how many. */
size_t dlrtab_expire(struct dlrtab *t, int64_t now);

void dlrtab_stats(struct dlrtab *t, struct dlr_stats *out);

enum dlr_id_type {
  DLR_ID_STRING,                   /* ASCII lower case, leading zeros dropped ("000": "0") */
  DLR_ID_DECIMAL,                  /* a decimal number: its canonical decimal */
  DLR_ID_HEX                       /* a hex number: as the canonical decimal */
};

/* The canonical form of an SMSC message id written as type, so that the
 * submit response's and the receipt's spelling of one id compare equal.
 * The id is at most MSG_ID_LEN - 1 characters; DLR_ID_LEN always holds the
 * result. Decimal and hex numbers of any length keep their exact value (no
 * 64-bit limit), so a hex id and its decimal spelling always compare equal.
 * Returns the length written (NUL-terminated), or -1 when the id is empty,
 * too long, does not fit in cap, or is not a number of that type. */
int dlr_id_normalize(char *out, size_t cap, const char *id, enum dlr_id_type type);

#endif
