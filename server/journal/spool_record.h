/* spool_record.h - the journal's record format, and the encoding of records into it.
 *
 * On disk: segment files DIR/NNNNNNNNNNNN.seg, each a run of records
 *   magic u32 | crc32c u32 | payload length u32 | type u8 | flags u8 | 0 u16 | payload
 * little-endian, the CRC over bytes 8..15 of the header and the payload,
 * seeded with the segment's number (0 in segments written before seeds).
 * The magic lets replay find the next record after a damaged one. Every
 * payload starts with the record's id (u64). Each segment starts with an
 * IDS record holding the id high-water mark, so the newest segment always
 * has it.
 *
 * Flags: COPY_FLAG on any record compaction re-appended, and on a MSG
 * written again for another connector (a drain, a reroute); VIA_FLAG on a
 * RECEIPT carrying `via`, SMSC_ID_FLAG on one carrying the SMSC's id (a
 * string after `via`); CREDIT_FLAG on a MSG carrying its credit epoch
 * (u32, after the payload bytes and before the callback). A record without
 * VIA_FLAG or CREDIT_FLAG is laid out as before they existed: old records
 * still read, and records without a via or a credit epoch stay the same.
 * A CREDIT record's payload: id (0) | account str | credit_set i64 |
 * credit_left i64 | credit_epoch u32.
 *
 * The encoding is here, static inline, because appenders run it on the
 * message path (spool_append.c), which must not pay a call into another
 * file for it, and the writer encodes each segment's IDS record with it
 * (spool_segment.c). Decoding is replay's alone (spool_replay.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SPOOL_RECORD_H
#define EMG_SPOOL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "crc32c.h"
#include "msg.h"
#include "spool.h"

#define SPOOL_MAGIC 0x4c505345u          /* "ESPL" */
#define HDR_LEN 16
#define RECORD_MAX (1u << 20)            /* largest payload accepted on replay */
#define COPY_FLAG 0x01                   /* re-appended (compaction; MSG: moved) */
#define VIA_FLAG 0x02                    /* RECEIPT: carries `via` (written before it did not) */
#define CREDIT_FLAG 0x04                 /* MSG: carries msg.credit_epoch (only when non-zero) */
#define SMSC_ID_FLAG 0x08                /* RECEIPT: carries the SMSC's id (written before it did not) */

static inline uint32_t get_u32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint8_t *put_u8(uint8_t *p, uint8_t v)
{
  *p = v;
  return p + 1;
}

static inline uint8_t *put_u16(uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  return p + 2;
}

static inline uint8_t *put_u32(uint8_t *p, uint32_t v)
{
  put_u16(p, (uint16_t)v);
  return put_u16(p + 2, (uint16_t)(v >> 16));
}

static inline uint8_t *put_u64(uint8_t *p, uint64_t v)
{
  put_u32(p, (uint32_t)v);
  return put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline uint8_t *put_bytes(uint8_t *p, const void *src, size_t n)
{
  if (n)
    memcpy(p, src, n);
  return p + n;
}

/* A string of at most cap - 1 bytes (the fixed arrays' limit) and 255 (the
 * length prefix's): longer ones are cut, which no protocol value reaches. */
static inline uint8_t *put_str(uint8_t *p, const char *s, size_t cap)
{
  size_t n = s ? strnlen(s, cap - 1) : 0;
  if (n > 255)
    n = 255;
  p = put_u8(p, (uint8_t)n);
  return put_bytes(p, s, n);
}

static inline uint8_t *put_addr(uint8_t *p, const struct msg_addr *a)
{
  p = put_str(p, a->addr, MSG_ADDR_LEN);
  p = put_u8(p, a->ton);
  return put_u8(p, a->npi);
}

/* An HTTP origin's receipt callback, at the end of MSG and RECEIPT
 * records, and only there when there is one: records without it (all from
 * UCP and SMPP origins) stay as they were. */
static inline uint8_t *put_callback(uint8_t *p, uint8_t method, const char *url)
{
  if (!url || !*url)
    return p;
  size_t n = strnlen(url, MSG_CALLBACK_LEN - 1);
  p = put_u8(p, method);
  p = put_u16(p, (uint16_t)n);
  return put_bytes(p, url, n);
}

#define ADDR_MAX (1 + MSG_ADDR_LEN + 2)
#define CALLBACK_MAX (1 + 2 + MSG_CALLBACK_LEN)
#define STR_MAX 256

/* The most bytes record_encode can write for rec. */
static inline size_t record_bound(const struct spool_record *rec)
{
  size_t n = HDR_LEN + 8 + 2;
  switch (rec->type) {
  case SPOOL_REC_MSG:
    return n + 8 + 2 * ADDR_MAX + 6 + 24 + 8 + 2 * STR_MAX + 6 + rec->msg->udh_len + rec->msg->data_len + 4 +
           CALLBACK_MAX;
  case SPOOL_REC_SENT:
    return n + STR_MAX;
  case SPOOL_REC_RECEIPT:
  case SPOOL_REC_UNRESOLVED:
    return n + 3 * STR_MAX + 3 + 16 + 2 * ADDR_MAX + 2 + CALLBACK_MAX;
  case SPOOL_REC_CREDIT:
    return n + STR_MAX + 8 + 8 + 4;
  default:
    return n;
  }
}

/* The header but its CRC: the writer seals records when it knows the
 * segment they go to (record_seal). */
static inline void header_fill(uint8_t *rec, uint32_t payload_len, uint8_t type, uint8_t flags)
{
  put_u32(rec, SPOOL_MAGIC);
  put_u32(rec + 8, payload_len);
  rec[12] = type;
  rec[13] = flags;
  put_u16(rec + 14, 0);
}

/* The CRC of a record starts from its segment's seed (its number), so that
 * the old records of a reused segment file never validate in its new life.
 * Segments written before that have seed 0. */
static inline void record_seal(uint8_t *rec, uint32_t seed)
{
  put_u32(rec + 4, crc32c(seed, rec + 8, HDR_LEN - 8 + get_u32(rec + 8)));
}

static inline uint8_t *put_receipt(uint8_t *p, const struct msg_receipt *r)
{
  p = put_str(p, r->id, MSG_ID_LEN);
  p = put_u8(p, r->state);
  p = put_u16(p, r->err);
  p = put_u64(p, (uint64_t)r->submit_time);
  p = put_u64(p, (uint64_t)r->done_time);
  p = put_addr(p, &r->src);
  return put_addr(p, &r->dst);
}

/* Encodes rec into out (record_bound bytes); returns the record's length. */
static inline size_t record_encode(uint8_t *out, const struct spool_record *rec)
{
  uint8_t flags = 0;
  uint8_t *p = put_u64(out + HDR_LEN, rec->id);
  switch (rec->type) {
  case SPOOL_REC_MSG: {
    const struct msg *m = rec->msg;
    if (rec->moved)
      flags |= COPY_FLAG;
    p = put_u16(p, rec->target);
    p = put_u64(p, m->id);
    p = put_addr(p, &m->src);
    p = put_addr(p, &m->dst);
    const uint8_t small[6] = { m->coding, m->dcs, m->pid, m->priority, m->dlr_mask, m->mms };
    p = put_bytes(p, small, sizeof small);
    p = put_u64(p, (uint64_t)m->validity);
    p = put_u64(p, (uint64_t)m->deferred);
    p = put_u64(p, (uint64_t)m->received_ms);
    p = put_u16(p, m->origin.connector);
    p = put_u16(p, m->origin.instance);
    p = put_u32(p, m->origin.session);
    p = put_str(p, m->origin.user, MSG_USER_LEN);
    p = put_str(p, m->origin.ref, MSG_ID_LEN);
    p = put_u16(p, m->udh_len);
    p = put_u32(p, m->data_len);
    p = put_bytes(p, m->udh, m->udh_len);
    p = put_bytes(p, m->data, m->data_len);
    /* Before the callback, whose presence replay tells by bytes left. */
    if (m->credit_epoch) {
      flags |= CREDIT_FLAG;
      p = put_u32(p, m->credit_epoch);
    }
    p = put_callback(p, m->callback_method, m->callback);
    break;
  }
  case SPOOL_REC_SENT:
    p = put_u16(p, rec->target);
    p = put_str(p, rec->smsc_id, STR_MAX);
    break;
  case SPOOL_REC_RECEIPT:
    p = put_u16(p, rec->target);
    p = put_str(p, rec->user, STR_MAX);
    p = put_receipt(p, rec->receipt);
    if (rec->via) {
      flags |= VIA_FLAG;
      p = put_u16(p, rec->via);
    }
    if (rec->smsc_id) {
      flags |= SMSC_ID_FLAG;
      p = put_str(p, rec->smsc_id, STR_MAX);
    }
    p = put_callback(p, rec->callback_method, rec->callback);
    break;
  case SPOOL_REC_UNRESOLVED:
    p = put_u16(p, rec->target);
    p = put_str(p, rec->smsc_id, STR_MAX);
    p = put_receipt(p, rec->receipt);
    break;
  case SPOOL_REC_CREDIT:
    p = put_str(p, rec->user, STR_MAX);
    p = put_u64(p, (uint64_t)rec->credit_set);
    p = put_u64(p, (uint64_t)rec->credit_left);
    p = put_u32(p, rec->credit_epoch);
    break;
  default:
    break;
  }
  size_t len = (size_t)(p - out);
  header_fill(out, (uint32_t)(len - HDR_LEN), (uint8_t)rec->type, flags);
  return len;
}

static inline uint64_t record_id(const uint8_t *rec)
{
  return (uint64_t)get_u32(rec + HDR_LEN) | (uint64_t)get_u32(rec + HDR_LEN + 4) << 32;
}

static inline size_t record_len(const uint8_t *rec)
{
  return HDR_LEN + get_u32(rec + 8);
}

#endif
