/* test_spool.c - the spool: records coming back intact and only while live,
 * group commit and its listeners, a torn tail and corruption in the middle,
 * segment deletion, reuse and compaction, credit epochs and the snapshots
 * taken before anything is deleted, and a full disk (a 1 MiB tmpfs).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "crc32c.h"
#include "core.h"
#include "spool.h"
#include "testutil.h"

/* What replay handed back, copied. */
struct replayed {
  enum spool_record_type type;
  uint64_t id;
  uint16_t target;
  struct msg *msg;
  char smsc_id[256];
  struct msg_receipt receipt;
  char user[256];
  char callback[MSG_CALLBACK_LEN];
  uint8_t callback_method;
  uint16_t via;
  int64_t credit_set, credit_left;
  uint32_t credit_epoch;
};

struct collector {
  struct replayed *recs;
  size_t n, cap;
  unsigned warnings;
  char last_warning[512];
};

static void collect(void *ctx, const struct spool_record *rec)
{
  struct collector *c = ctx;
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 64;
    c->recs = realloc(c->recs, c->cap * sizeof *c->recs);
  }
  struct replayed *r = &c->recs[c->n++];
  memset(r, 0, sizeof *r);
  r->type = rec->type;
  r->id = rec->id;
  r->target = rec->target;
  if (rec->msg)
    r->msg = msg_clone(rec->msg);
  if (rec->smsc_id)
    snprintf(r->smsc_id, sizeof r->smsc_id, "%s", rec->smsc_id);
  if (rec->receipt)
    r->receipt = *rec->receipt;
  if (rec->user)
    snprintf(r->user, sizeof r->user, "%s", rec->user);
  if (rec->callback)
    snprintf(r->callback, sizeof r->callback, "%s", rec->callback);
  r->callback_method = rec->callback_method;
  r->via = rec->via;
  r->credit_set = rec->credit_set;
  r->credit_left = rec->credit_left;
  r->credit_epoch = rec->credit_epoch;
}

static void collect_warn(void *ctx, const char *text)
{
  struct collector *c = ctx;
  c->warnings++;
  snprintf(c->last_warning, sizeof c->last_warning, "%s", text);
}

static void collector_reset(struct collector *c)
{
  for (size_t i = 0; i < c->n; i++)
    msg_free(c->recs[i].msg);
  free(c->recs);
  memset(c, 0, sizeof *c);
}

static size_t count_type(const struct collector *c, enum spool_record_type type)
{
  size_t n = 0;
  for (size_t i = 0; i < c->n; i++)
    n += c->recs[i].type == type;
  return n;
}

static uint8_t udh_bytes[] = { 0x05, 0x00, 0x03, 0x2a, 0x02, 0x01 };
static uint8_t data_bytes[145];

/* A message with every field set, different per id. */
static void msg_make(struct msg *m, uint64_t id)
{
  memset(m, 0, sizeof *m);
  m->id = id;
  snprintf(m->src.addr, sizeof m->src.addr, "49171%08u", (unsigned)(id % 100000000));
  m->src.ton = MSG_TON_INTERNATIONAL;
  m->src.npi = 1;
  snprintf(m->dst.addr, sizeof m->dst.addr, "Alpha%03u", (unsigned)(id % 1000));
  m->dst.ton = MSG_TON_ALPHANUMERIC;
  m->dst.npi = 9;
  m->coding = (uint8_t)(id % 3);
  m->dcs = 0xf1;
  m->pid = 0x41;
  m->priority = 3;
  m->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  m->mms = 1;
  m->validity = 1764480000 + (int64_t)id;
  m->deferred = -120;
  m->received_ms = 1764480000123 + (int64_t)id;
  m->origin.connector = 7;
  m->origin.instance = 3;
  m->origin.session = 0xdeadbeef;
  snprintf(m->origin.user, sizeof m->origin.user, "load%u", (unsigned)(id % 7));
  snprintf(m->origin.ref, sizeof m->origin.ref, "4917612345678:261130053%03u", (unsigned)(id % 1000));
  m->udh_len = (id % 2) ? sizeof udh_bytes : 0;
  m->udh = m->udh_len ? udh_bytes : NULL;
  for (size_t i = 0; i < sizeof data_bytes; i++)
    data_bytes[i] = (uint8_t)(i * 7 + 1);
  m->data_len = sizeof data_bytes - (uint32_t)(id % 5);
  m->data = data_bytes;
  /* Every other one from an HTTP origin, with a receipt callback. */
  m->callback = (id % 2) ? NULL : "http://127.0.0.1:8080/dlr?id=%I&status=%d&to=%P";
  m->callback_method = (id % 2) ? MSG_CALLBACK_NONE : MSG_CALLBACK_GET;
}

static int addr_equal(const struct msg_addr *a, const struct msg_addr *b)
{
  return strcmp(a->addr, b->addr) == 0 && a->ton == b->ton && a->npi == b->npi;
}

static int receipt_equal(const struct msg_receipt *a, const struct msg_receipt *b)
{
  return strcmp(a->id, b->id) == 0 && a->state == b->state && a->err == b->err &&
         a->submit_time == b->submit_time && a->done_time == b->done_time && addr_equal(&a->src, &b->src) &&
         addr_equal(&a->dst, &b->dst);
}

/* Field by field and byte by byte: padding and bytes after a NUL are not kept. */
static int msg_equal(const struct msg *a, const struct msg *b)
{
  return a->id == b->id && addr_equal(&a->src, &b->src) && addr_equal(&a->dst, &b->dst) &&
         a->coding == b->coding && a->dcs == b->dcs && a->pid == b->pid && a->priority == b->priority &&
         a->dlr_mask == b->dlr_mask && a->mms == b->mms && a->validity == b->validity &&
         a->deferred == b->deferred && a->received_ms == b->received_ms &&
         a->origin.connector == b->origin.connector && a->origin.instance == b->origin.instance &&
         a->origin.session == b->origin.session && strcmp(a->origin.user, b->origin.user) == 0 &&
         strcmp(a->origin.ref, b->origin.ref) == 0 && a->udh_len == b->udh_len &&
         a->data_len == b->data_len && (!a->udh_len || memcmp(a->udh, b->udh, a->udh_len) == 0) &&
         memcmp(a->data, b->data, a->data_len) == 0 && a->callback_method == b->callback_method &&
         a->credit_epoch == b->credit_epoch &&
         (a->callback ? b->callback && strcmp(a->callback, b->callback) == 0 : !b->callback);
}

static void receipt_make(struct msg_receipt *r, uint64_t id)
{
  memset(r, 0, sizeof *r);
  snprintf(r->id, sizeof r->id, "4917612345678:26113005%04u", (unsigned)(id % 10000));
  r->state = MSG_STATE_DELIVERED;
  r->err = 123;
  r->submit_time = 1764480000;
  r->done_time = 1764480060;
  snprintf(r->src.addr, sizeof r->src.addr, "4912345678901");
  r->src.ton = 1;
  r->src.npi = 1;
  snprintf(r->dst.addr, sizeof r->dst.addr, "4917612345678");
  r->dst.ton = 2;
  r->dst.npi = 1;
}

static char dir[64];

static void dir_make(void)
{
  snprintf(dir, sizeof dir, "/tmp/emg-spool-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

/* The segment files of dir, oldest first, in names[] (up to max). */
static size_t dir_segments(char names[][600], size_t max, uint64_t *bytes)
{
  DIR *d = opendir(dir);
  size_t n = 0;
  *bytes = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!strstr(de->d_name, ".seg"))
      continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(path, &st) == 0)
      *bytes += (uint64_t)st.st_size;
    if (n < max)
      snprintf(names[n], 600, "%s", path);
    n++;
  }
  if (d)
    closedir(d);
  qsort(names, n < max ? n : max, 600, (int (*)(const void *, const void *))strcmp);
  return n;
}

static void dir_remove(void)
{
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (de->d_name[0] != '.')
      unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

static struct spool *open_with(struct collector *c, size_t segment_size, bool sync)
{
  struct spool_options opt = { .segment_size = segment_size, .compact_after_ms = 1, .sync = sync };
  char err[256] = "";
  struct spool *s = spool_open(dir, &opt, collect, collect_warn, c, err, sizeof err);
  if (!s)
    fprintf(stderr, "spool_open: %s\n", err);
  return s;
}

static void sleep_ms(long ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&ts, NULL);
}

static bool wait_durable(struct spool *s, uint64_t ticket)
{
  for (int i = 0; i < 30000 && spool_durable(s) < ticket; i++)
    sleep_ms(1);
  return spool_durable(s) >= ticket;
}

static uint64_t append_msg(struct spool *s, uint64_t id)
{
  struct msg m;
  msg_make(&m, id);
  return spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = id, .target = 2, .msg = &m });
}

static uint64_t append_id(struct spool *s, enum spool_record_type type, uint64_t id)
{
  return spool_append(s, &(struct spool_record){ .type = type, .id = id });
}

/* A spool in a new directory holding the durable MSG records of ids 1..n. */
/* A spool in a new directory. */
static struct spool *spool_fresh(struct collector *c, size_t segment_size, bool sync)
{
  dir_make();
  struct spool *s = open_with(c, segment_size, sync);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  return s;
}

/* Stops s and opens its directory again, replaying into c (emptied first). */
static struct spool *spool_restart(struct spool *s, struct collector *c, size_t segment_size, bool sync)
{
  spool_close(s);
  collector_reset(c);
  s = open_with(c, segment_size, sync);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  return s;
}

static struct spool *spool_with_msgs(struct collector *c, size_t segment_size, uint64_t n)
{
  struct spool *s = spool_fresh(c, segment_size, false);
  uint64_t t = 0;
  /* Batches of 1000 at most: a writer that lags beside other tests would
   * otherwise take everything as one batch, into one segment. */
  for (uint64_t id = 1; id <= n; id++)
    if ((t = append_msg(s, id)) && id % 1000 == 0)
      wait_durable(s, t);
  CU_ASSERT(wait_durable(s, t));
  return s;
}

static void test_roundtrip(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 0, true);
  CU_ASSERT_EQUAL(c.n, 0);
  struct msg_receipt rc1, rc2;
  receipt_make(&rc1, 1);
  receipt_make(&rc2, 2);
  CU_ASSERT(append_id(s, SPOOL_REC_IDS, 500) > 0);
  for (uint64_t id = 1001; id <= 1004; id++)
    CU_ASSERT(append_msg(s, id) > 0);
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_SENT, .id = 1002, .target = 5,
                                                     .smsc_id = "1087269843" }) > 0);
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_SENT, .id = 1003, .target = 5,
                                                     .smsc_id = "77" }) > 0);
  CU_ASSERT(append_id(s, SPOOL_REC_FINISHED, 1003) > 0);   /* its SENT dies with it */
  CU_ASSERT(append_id(s, SPOOL_REC_FINISHED, 1004) > 0);
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_RECEIPT, .id = 9, .target = 7,
                                                     .receipt = &rc1, .user = "load", .via = 4,
                                                     .callback = "http://app/dlr", .callback_method = MSG_CALLBACK_POST }) > 0);
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_RECEIPT, .id = 10, .target = 7,
                                                     .receipt = &rc2, .user = "other" }) > 0);
  /* Receipts waiting for the cluster: one still waits, one is done. */
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_UNRESOLVED, .id = 11, .target = 3,
                                                     .smsc_id = "abc-77", .receipt = &rc2 }) > 0);
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_UNRESOLVED, .id = 12, .target = 3,
                                                     .smsc_id = "abc-78", .receipt = &rc1 }) > 0);
  CU_ASSERT(append_id(s, SPOOL_REC_RECEIPT_DONE, 12) > 0);
  uint64_t last = append_id(s, SPOOL_REC_RECEIPT_DONE, 10);
  CU_ASSERT(wait_durable(s, last));
  struct spool_stats st;
  spool_stats(s, &st);
  CU_ASSERT_EQUAL(st.durable_ticket, last);
  spool_close(s);

  s = open_with(&c, 0, true);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL_FATAL(c.n, 6);   /* MSG 1001, MSG 1002, SENT 1002, RECEIPT 9, UNRESOLVED 11, IDS */
  struct msg m;
  msg_make(&m, 1001);
  CU_ASSERT_EQUAL(c.recs[0].type, SPOOL_REC_MSG);
  CU_ASSERT_EQUAL(c.recs[0].id, 1001);
  CU_ASSERT_EQUAL(c.recs[0].target, 2);
  CU_ASSERT(c.recs[0].msg && msg_equal(c.recs[0].msg, &m));
  CU_ASSERT(c.recs[0].msg && c.recs[0].msg->udh_len == sizeof udh_bytes);
  msg_make(&m, 1002);
  CU_ASSERT_EQUAL(c.recs[1].type, SPOOL_REC_MSG);
  CU_ASSERT(c.recs[1].msg && msg_equal(c.recs[1].msg, &m));
  CU_ASSERT(c.recs[1].msg && c.recs[1].msg->udh_len == 0);
  CU_ASSERT_EQUAL(c.recs[2].type, SPOOL_REC_SENT);
  CU_ASSERT_EQUAL(c.recs[2].id, 1002);
  CU_ASSERT_EQUAL(c.recs[2].target, 5);
  CU_ASSERT_STRING_EQUAL(c.recs[2].smsc_id, "1087269843");
  CU_ASSERT_EQUAL(c.recs[3].type, SPOOL_REC_RECEIPT);
  CU_ASSERT_EQUAL(c.recs[3].id, 9);
  CU_ASSERT_EQUAL(c.recs[3].target, 7);
  CU_ASSERT_STRING_EQUAL(c.recs[3].user, "load");
  CU_ASSERT_STRING_EQUAL(c.recs[3].callback, "http://app/dlr");
  CU_ASSERT_EQUAL(c.recs[3].callback_method, MSG_CALLBACK_POST);
  CU_ASSERT_EQUAL(c.recs[3].via, 4);   /* the connector it came through, before the callback */
  CU_ASSERT(c.recs[1].msg && c.recs[1].msg->callback && c.recs[0].msg && !c.recs[0].msg->callback);
  CU_ASSERT(receipt_equal(&c.recs[3].receipt, &rc1));
  CU_ASSERT_EQUAL(c.recs[4].type, SPOOL_REC_UNRESOLVED);
  CU_ASSERT_EQUAL(c.recs[4].id, 11);
  CU_ASSERT_EQUAL(c.recs[4].target, 3);
  CU_ASSERT_STRING_EQUAL(c.recs[4].smsc_id, "abc-77");
  CU_ASSERT(receipt_equal(&c.recs[4].receipt, &rc2));
  /* The high-water mark: above the IDS record, the highest message id seen. */
  CU_ASSERT_EQUAL(c.recs[5].type, SPOOL_REC_IDS);
  CU_ASSERT_EQUAL(c.recs[5].id, 1004);
  spool_stats(s, &st);
  CU_ASSERT_EQUAL(st.live_messages, 2);
  CU_ASSERT_EQUAL(st.live_receipts, 2);
  /* A mark above every id is kept as it is, across a second restart. */
  CU_ASSERT(wait_durable(s, append_id(s, SPOOL_REC_IDS, 5000)));
  s = spool_restart(s, &c, 0, true);
  CU_ASSERT_EQUAL_FATAL(c.n, 6);
  CU_ASSERT_EQUAL(c.recs[5].id, 5000);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

static atomic_uint durable_calls;

static void on_durable(void *arg)
{
  atomic_fetch_add((atomic_uint *)arg, 1);
}

static void test_durable_listeners(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 0, true);
  atomic_store(&durable_calls, 0);
  CU_ASSERT_EQUAL(spool_on_durable(s, on_durable, &durable_calls), 0);
  uint64_t prev = 0;
  for (uint64_t id = 1; id <= 1000; id++) {
    uint64_t t = append_msg(s, id);
    CU_ASSERT(t > prev);
    prev = t;
  }
  CU_ASSERT(wait_durable(s, prev));
  CU_ASSERT(atomic_load(&durable_calls) > 0);
  struct spool_stats st;
  /* Statistics are published just after a commit is durable. */
  for (int i = 0; i < 20000 && (spool_stats(s, &st), st.records < 1000); i++)   /* 20 s: a hang guard */
    sleep_ms(1);
  CU_ASSERT(st.fsyncs >= 1);
  CU_ASSERT(st.fsyncs <= 1001);   /* group commit: the records share fsyncs */
  CU_ASSERT_FALSE(spool_failing(s, NULL, 0));
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

static void test_torn_tail(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 0, false);
  uint64_t t = 0;
  for (uint64_t id = 1; id <= 100; id++)
    t = append_msg(s, id * 10);   /* id % 10 == 0: every record the same length */
  CU_ASSERT(wait_durable(s, t));
  spool_close(s);
  char names[8][600];
  uint64_t bytes;
  CU_ASSERT_EQUAL_FATAL(dir_segments(names, 8, &bytes), 1);
  off_t full = (off_t)bytes, reclen = (full - 24) / 100;
  CU_ASSERT_EQUAL_FATAL(truncate(names[0], full - reclen / 2), 0);

  s = open_with(&c, 0, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 99);
  CU_ASSERT_EQUAL(c.recs[98].id, 990);
  CU_ASSERT_EQUAL(c.warnings, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(c.last_warning, names[0]));
  CU_ASSERT_PTR_NOT_NULL(strstr(c.last_warning, "torn"));
  struct stat st;
  CU_ASSERT_EQUAL(stat(names[0], &st), 0);
  CU_ASSERT_EQUAL(st.st_size, full - reclen);
  /* Cut once: the next start is clean. */
  s = spool_restart(s, &c, 0, false);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 99);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

static void test_corruption_middle(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 4096, false);
  uint64_t t = 0;
  for (uint64_t id = 1; id <= 20; id++)
    CU_ASSERT((t = append_msg(s, id * 10)) > 0);
  CU_ASSERT(wait_durable(s, t));
  spool_close(s);
  char names[8][600];
  uint64_t bytes;
  CU_ASSERT_FATAL(dir_segments(names, 8, &bytes) >= 1);
  /* Messages spread over several segments only when batches do: write a
   * second run so that there are two segments. */
  s = open_with(&c, 4096, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  for (uint64_t id = 21; id <= 40; id++)
    CU_ASSERT((t = append_msg(s, id * 10)) > 0);
  CU_ASSERT(wait_durable(s, t));
  spool_close(s);
  collector_reset(&c);
  CU_ASSERT_FATAL(dir_segments(names, 8, &bytes) >= 2);
  /* Flip a payload byte of the second record (after IDS and one MSG). */
  int fd = open(names[0], O_RDWR);
  CU_ASSERT_FATAL(fd >= 0);
  uint8_t len_le[4];   /* the first MSG's payload length, after the 24-byte IDS record */
  CU_ASSERT_EQUAL(pread(fd, len_le, 4, 24 + 8), 4);
  off_t reclen = 16 + (len_le[0] | len_le[1] << 8 | len_le[2] << 16), at = 24 + reclen + 40;
  uint8_t byte;
  CU_ASSERT_EQUAL(pread(fd, &byte, 1, at), 1);
  byte ^= 0x55;
  CU_ASSERT_EQUAL(pwrite(fd, &byte, 1, at), 1);
  close(fd);

  s = open_with(&c, 4096, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 1);
  char expect[700];
  snprintf(expect, sizeof expect, "%s at offset %lld", names[0], (long long)(24 + reclen));
  CU_ASSERT_PTR_NOT_NULL(strstr(c.last_warning, expect));
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 39);
  CU_ASSERT_EQUAL(c.recs[0].id, 10);
  CU_ASSERT_EQUAL(c.recs[1].id, 30);   /* 20 was the damaged one */
  CU_ASSERT_EQUAL(c.recs[38].id, 400);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

static void stats_wait(struct spool *s, struct spool_stats *st, uint64_t max_segments)
{
  for (int i = 0; i < 30000; i++) {
    spool_stats(s, st);
    if (st->segments <= max_segments)
      return;
    sleep_ms(1);
  }
}

static void test_segments_deleted(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 8192, false);
  uint64_t t = 0;
  for (uint64_t id = 1; id <= 500; id++) {
    t = append_msg(s, id);
    if (id % 20 == 0)
      wait_durable(s, t);   /* small batches: many segments */
  }
  CU_ASSERT(wait_durable(s, t));
  char names[64][600];
  uint64_t bytes;
  struct spool_stats st;
  spool_stats(s, &st);
  CU_ASSERT(st.segments > 5);
  CU_ASSERT(dir_segments(names, 64, &bytes) > 5);
  for (uint64_t id = 1; id <= 500; id++)
    t = append_id(s, SPOOL_REC_FINISHED, id);
  CU_ASSERT(wait_durable(s, t));
  stats_wait(s, &st, 1);
  CU_ASSERT_EQUAL(st.live_messages, 0);
  CU_ASSERT_EQUAL(st.segments, 1);
  CU_ASSERT(st.segments_deleted > 5);
  CU_ASSERT_EQUAL(dir_segments(names, 64, &bytes), 1);
  s = spool_restart(s, &c, 8192, false);
  CU_ASSERT_EQUAL(c.n, 1);
  CU_ASSERT_EQUAL(c.recs[0].type, SPOOL_REC_IDS);
  CU_ASSERT_EQUAL(c.recs[0].id, 500);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

/* The target the last replayed MSG record of id gives, or -1. */
static int last_target(const struct collector *c, uint64_t id)
{
  int t = -1;
  for (size_t i = 0; i < c->n; i++)
    if (c->recs[i].type == SPOOL_REC_MSG && c->recs[i].id == id)
      t = c->recs[i].target;
  return t;
}

/* A message moved to another connector (a drain) is written again as a
 * copy: replay ends with the later target, in the same segment or a later
 * one, a SENT after the move still follows, and its credit counts once. */
static void test_moved_messages(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 0, true);
  struct msg m;
  for (uint64_t id = 1; id <= 3; id++)
    append_msg(s, id);
  msg_make(&m, 4);
  m.credit_epoch = 9;
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 4, .target = 2, .msg = &m });
  msg_make(&m, 1);
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 1, .target = 5, .msg = &m, .moved = true });
  append_id(s, SPOOL_REC_FINISHED, 2);
  msg_make(&m, 4);
  m.credit_epoch = 9;
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 4, .target = 7, .msg = &m, .moved = true });
  uint64_t t = spool_append(s, &(struct spool_record){ .type = SPOOL_REC_SENT, .id = 4, .target = 7,
                                                         .smsc_id = "abc" });
  CU_ASSERT(wait_durable(s, t));
  for (int round = 0; round < 2; round++) {
    s = spool_restart(s, &c, 0, true);
    CU_ASSERT_EQUAL(last_target(&c, 1), 5);
    CU_ASSERT_EQUAL(last_target(&c, 2), -1);
    CU_ASSERT_EQUAL(last_target(&c, 3), round == 0 ? 2 : 6);
    CU_ASSERT_EQUAL(last_target(&c, 4), 7);
    CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_SENT), 1);
    CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_CREDIT_PART), 1);
    /* the SENT comes after the MSG it belongs to */
    size_t sent = 0, moved = 0;
    for (size_t i = 0; i < c.n; i++) {
      if (c.recs[i].type == SPOOL_REC_SENT)
        sent = i;
      if (c.recs[i].type == SPOOL_REC_MSG && c.recs[i].id == 4 && c.recs[i].target == 7)
        moved = i;
    }
    CU_ASSERT(moved < sent);
    /* a move in a later segment than its original, after the restart */
    if (round == 0) {
      msg_make(&m, 3);
      t = spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 3, .target = 6, .msg = &m,
                                                   .moved = true });
      CU_ASSERT(wait_durable(s, t));
    }
  }
  spool_close(s);
  collector_reset(&c);
}

static void test_compaction(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 64 * 1024, false);
  struct msg_receipt rc;
  receipt_make(&rc, 1);
  uint64_t t = 0, id = 0;
  struct spool_stats st;
  for (int round = 0; round < 10; round++) {
    uint64_t first = id + 1;
    for (int i = 0; i < 10000; i++) {
      t = append_msg(s, ++id);
      if (i % 1000 == 999)
        wait_durable(s, t);
    }
    /* The last 10 of each round stay, one with its SENT. */
    t = spool_append(s, &(struct spool_record){ .type = SPOOL_REC_SENT, .id = id, .target = 1, .smsc_id = "abc" });
    t = spool_append(s, &(struct spool_record){ .type = SPOOL_REC_RECEIPT, .id = (uint64_t)round + 1,
                                                 .target = 7, .receipt = &rc, .user = "u" });
    t = spool_append(s, &(struct spool_record){ .type = SPOOL_REC_UNRESOLVED, .id = (uint64_t)round + 101,
                                                 .target = 2, .receipt = &rc, .smsc_id = "k" });
    for (uint64_t k = first; k <= id - 10; k++)
      t = append_id(s, SPOOL_REC_FINISHED, k);
    CU_ASSERT(wait_durable(s, t));
    spool_stats(s, &st);
    CU_ASSERT(st.disk_bytes - st.spare_bytes < 8u << 20);   /* one round writes ~2.5 MB; ten would be 25 */
    CU_ASSERT(st.spare_bytes <= 2 * (512 * 1024));   /* two segments of at most 64 KiB and a batch */
  }
  /* Once idle, compaction brings the spool down to about what is live, and
   * the directory with it (the files follow the counts: a compaction still
   * going may have opened its next segment before the last old one goes). */
  char names[64][600];
  uint64_t bytes = 0;
  for (int i = 0; i < 600; i++) {   /* up to 60 s: beside integration tests on two cores */
    sleep_ms(100);
    spool_stats(s, &st);
    dir_segments(names, 64, &bytes);
    if (st.disk_bytes - st.spare_bytes < 256 * 1024 && bytes < (256 + 64) * 1024)
      break;
  }
  CU_ASSERT(st.disk_bytes - st.spare_bytes < 256 * 1024);
  CU_ASSERT(st.compacted > 0);
  CU_ASSERT_EQUAL(st.live_messages, 100);
  CU_ASSERT_EQUAL(st.live_receipts, 20);
  CU_ASSERT(bytes < (256 + 64) * 1024);   /* and the zeros written ahead in the current one, up to its size */
  spool_close(s);

  s = open_with(&c, 64 * 1024, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 100);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_SENT), 10);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_RECEIPT), 10);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_UNRESOLVED), 10);
  bool intact = true, sent_after_msg = true;
  uint64_t seen_mask = 0;
  for (size_t i = 0; i < c.n; i++) {
    const struct replayed *r = &c.recs[i];
    if (r->type == SPOOL_REC_MSG) {
      struct msg m;
      msg_make(&m, r->id);
      intact &= r->msg && msg_equal(r->msg, &m) && (r->id - 1) % 10000 >= 9990;
      if (r->id % 10000 == 0)
        seen_mask |= 1u << (r->id / 10000);
    } else if (r->type == SPOOL_REC_SENT) {
      sent_after_msg &= (seen_mask >> (r->id / 10000)) & 1;
    }
  }
  CU_ASSERT(intact);
  CU_ASSERT(sent_after_msg);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

static void test_disk_full(void)
{
  dir_make();
  if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) {
    test_skip("cannot mount a tmpfs (%s): the disk-full test needs root", strerror(errno));
    dir_remove();
    return;
  }
  char filler[300];
  snprintf(filler, sizeof filler, "%s/filler", dir);
  FILE *f = fopen(filler, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  static char block[1024];
  for (int i = 0; i < 640; i++)
    fwrite(block, 1, sizeof block, f);
  fclose(f);

  struct collector c = { 0 };
  struct spool *s = open_with(&c, 128 * 1024, true);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  uint64_t id = 0, last_ok = 0, accepted = 0;
  char why[256] = "";
  for (int i = 0; i < 100000 && !spool_failing(s, why, sizeof why); i++) {
    uint64_t t = append_msg(s, ++id);
    if (t) {
      last_ok = t;
      accepted++;
    }
    /* Batches of 50 at most: one bigger than the space the filler gives
     * back (a writer starved beside other tests) could never be written. */
    for (int k = 0; i % 50 == 49 && k < 30000 && spool_durable(s) < last_ok && !spool_failing(s, NULL, 0); k++)
      sleep_ms(1);
  }
  CU_ASSERT_FATAL(spool_failing(s, why, sizeof why));
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "No space"));
  CU_ASSERT_EQUAL(append_msg(s, ++id), 0);   /* refused while failing */
  CU_ASSERT(spool_durable(s) < last_ok);     /* what failed is not durable */
  struct spool_stats st;
  spool_stats(s, &st);
  CU_ASSERT(st.failed);

  unlink(filler);   /* space returns: the spool resumes by itself */
  for (int i = 0; i < 3000 && spool_failing(s, NULL, 0); i++)   /* 30 s: retries come each 0.5 s */
    sleep_ms(10);
  CU_ASSERT_FALSE(spool_failing(s, NULL, 0));
  CU_ASSERT(wait_durable(s, last_ok));
  uint64_t t = append_msg(s, ++id);
  CU_ASSERT(t > last_ok);
  accepted += t > 0;
  CU_ASSERT(wait_durable(s, t));
  spool_close(s);

  s = open_with(&c, 128 * 1024, true);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 0);   /* no half record was left behind */
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), accepted);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
  CU_ASSERT_EQUAL(umount(dir), 0);
  rmdir(dir);
}

/* Of messages 1..24000, finishes all but every thousandth, then waits (up
 * to 60 s: beside integration tests on two cores compaction can take its
 * time) for compaction to leave one segment, under max_disk bytes. */
static void finish_and_compact(struct spool *s, struct spool_stats *st, uint64_t max_disk)
{
  uint64_t t = 0;
  for (uint64_t id = 1; id <= 24000; id++)
    if (id % 1000)
      t = append_id(s, SPOOL_REC_FINISHED, id);
  CU_ASSERT(wait_durable(s, t));
  for (int i = 0; i < 600; i++) {
    sleep_ms(100);
    spool_stats(s, st);
    if (st->segments == 1 && st->disk_bytes - st->spare_bytes < max_disk)
      break;
  }
}

/* Damage bigger than compaction's buffer (2.5 MB of zeros in an old
 * segment): replay skips it, and compaction passes over it instead of
 * waiting for a record to end there. */
static void test_compaction_over_damage(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_with_msgs(&c, 3u << 20, 24000);
  spool_close(s);
  char names[8][600];
  uint64_t bytes;
  CU_ASSERT_FATAL(dir_segments(names, 8, &bytes) >= 2);
  int fd = open(names[0], O_WRONLY);
  CU_ASSERT_FATAL(fd >= 0);
  static uint8_t zeros[(5u << 20) / 2];
  CU_ASSERT_EQUAL(pwrite(fd, zeros, sizeof zeros, 256 * 1024), (ssize_t)sizeof zeros);
  close(fd);

  s = open_with(&c, 3u << 20, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(c.last_warning, names[0]));
  size_t kept = 0, lost = 0;
  for (size_t i = 0; i < c.n; i++)
    if (c.recs[i].type == SPOOL_REC_MSG)
      kept += c.recs[i].id % 1000 == 0;
  lost = 24 - kept;
  CU_ASSERT(lost >= 2 && lost < 24);   /* the zeros hid some, not all */
  struct spool_stats st;
  finish_and_compact(s, &st, UINT64_MAX);
  CU_ASSERT_EQUAL(st.segments, 1);
  CU_ASSERT_EQUAL(st.live_messages, kept);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

/* Copies every file of dir into a new directory, whose name replaces dir's
 * (the old name goes to old): the spool's files as a crash would leave
 * them, since the copy is taken while the spool runs. */
static void dir_snapshot(char *old, size_t old_cap)
{
  snprintf(old, old_cap, "%s", dir);
  dir_make();
  DIR *d = opendir(old);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    char from[600], to[600];
    snprintf(from, sizeof from, "%s/%s", old, de->d_name);
    snprintf(to, sizeof to, "%s/%s", dir, de->d_name);
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
      CU_ASSERT_EQUAL(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
  }
  closedir(d);
}

static size_t dir_count(const char *suffix)
{
  DIR *d = opendir(dir);
  size_t n = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    size_t len = strlen(de->d_name), sl = strlen(suffix);
    n += len > sl && strcmp(de->d_name + len - sl, suffix) == 0;
  }
  if (d)
    closedir(d);
  return n;
}

/* Deleted segments' files are kept (two) and become the next segments.
 * Their old records, all dead, must never come back: not after a clean
 * stop, and not from a copy of the files taken while the spool ran, when
 * the reused file still holds its old records past the new ones. */
static void test_segments_reused(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 8192, false);
  uint64_t t = 0, id = 0;
  for (int i = 0; i < 300; i++) {
    t = append_msg(s, ++id);
    if (id % 20 == 0)
      wait_durable(s, t);   /* batches of about 5 KB: a segment per two */
  }
  for (uint64_t k = 1; k <= 300; k++)
    t = append_id(s, SPOOL_REC_FINISHED, k);
  CU_ASSERT(wait_durable(s, t));
  struct spool_stats st;
  stats_wait(s, &st, 1);
  CU_ASSERT_EQUAL(st.segments, 1);
  CU_ASSERT(st.segments_deleted > 5);
  CU_ASSERT_EQUAL(dir_count(".free"), 2);
  CU_ASSERT(st.spare_bytes >= 2 * 8192);
  uint64_t reused = st.segments_reused;   /* an idle moment may have closed the last one */
  /* Batches of 10 (about 2.5 KB) until a spare is the current segment:
   * then its old records lie past the new ones. */
  for (int i = 0; i < 100 && st.segments_reused == reused; i++) {
    for (int k = 0; k < 10; k++)
      t = append_msg(s, ++id);
    CU_ASSERT(wait_durable(s, t));
    spool_stats(s, &st);
  }
  CU_ASSERT_FATAL(st.segments_reused == reused + 1);
  CU_ASSERT(dir_count(".free") <= 2);   /* never more than two kept */
  uint64_t live = id - 300;
  char running[64];
  dir_snapshot(running, sizeof running);
  spool_close(s);

  s = open_with(&c, 8192, false);   /* the copy, as after a crash */
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), live);
  for (size_t i = 0; i < c.n; i++)
    CU_ASSERT(c.recs[i].type != SPOOL_REC_MSG || c.recs[i].id > 300);
  /* The reused file's old records past the new ones are cut; unless the
   * compaction copies the writer may have added meanwhile reached past them. */
  CU_ASSERT(c.warnings <= 1);
  CU_ASSERT(c.warnings == 0 || strstr(c.last_warning, "torn record at the tail"));
  spool_close(s);
  collector_reset(&c);
  dir_remove();

  snprintf(dir, sizeof dir, "%s", running);   /* after a clean stop */
  s = open_with(&c, 8192, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), live);
  for (size_t i = 0; i < c.n; i++)
    CU_ASSERT(c.recs[i].type != SPOOL_REC_MSG || c.recs[i].id > 300);
  spool_stats(s, &st);
  CU_ASSERT_EQUAL(st.segments_reused, 1);   /* the new run's first segment took a spare left */
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

/* Zeros are written ahead of the records in the current segment (commits
 * then overwrite written blocks); after a crash replay cuts them without a
 * warning, and a clean stop leaves none. */
static void test_zeros_ahead(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_with_msgs(&c, 1u << 20, 100);
  char names[8][600];
  uint64_t bytes = 0;
  struct spool_stats st;
  /* The zeros follow the commit. A file being written grows page by page
   * as it is looked at, so wait for the whole segment (or give up). The
   * statistics are published after the commit is durable: wait for them
   * to show all 100 messages too, or the sizes compared below are stale. */
  for (int i = 0; i < 20000; i++) {   /* 20 s: a hang guard */
    spool_stats(s, &st);
    if (st.live_messages == 100 && dir_segments(names, 8, &bytes) == 1 && bytes >= 1u << 20)
      break;
    sleep_ms(1);
  }
  if (bytes <= st.disk_bytes - st.spare_bytes) {
    test_skip("%s takes no O_DIRECT writes: nothing is written ahead there", dir);
    spool_close(s);
    collector_reset(&c);
    dir_remove();
    return;
  }
  CU_ASSERT_EQUAL(bytes, 1u << 20);   /* zeros to the segment's size */
  char running[64];
  dir_snapshot(running, sizeof running);
  spool_close(s);

  s = open_with(&c, 1u << 20, false);   /* the copy, as after a crash */
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 100);
  spool_close(s);
  collector_reset(&c);
  dir_remove();

  snprintf(dir, sizeof dir, "%s", running);   /* a clean stop cut the zeros */
  CU_ASSERT(dir_segments(names, 8, &bytes) >= 1);
  CU_ASSERT_EQUAL(bytes, st.disk_bytes - st.spare_bytes);
  dir_remove();
}

/* The SCTS ceiling a process notes comes back to the next one, beside the
 * segments' last modification. */
static void test_ceiling_noted(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_with_msgs(&c, 0, 10);
  int64_t now = (int64_t)time(NULL);
  CU_ASSERT(spool_previous_write(s) == 0);   /* a new spool */
  CU_ASSERT(spool_previous_scts_ceiling(s) == 0);
  char err[256];
  CU_ASSERT_EQUAL(spool_note_scts_ceiling(s, now + 20, err, sizeof err), 0);
  spool_close(s);
  s = open_with(&c, 0, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(spool_previous_scts_ceiling(s), now + 20);
  CU_ASSERT(spool_previous_write(s) >= now && spool_previous_write(s) <= now + 5);
  CU_ASSERT_EQUAL(spool_note_scts_ceiling(s, now - 100, err, sizeof err), 0);   /* the last one noted counts */
  s = spool_restart(s, &c, 0, false);
  CU_ASSERT_EQUAL(spool_previous_scts_ceiling(s), now - 100);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 10);   /* the file is no segment */
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

/* The core notes the ceiling before it hands out a stamp past it (a
 * recipient's stamps far ahead of the clock), and ahead of stamps that come
 * close; the next process starts past it. An earlier version's floor file
 * is read, and goes with the first note. */
static void test_core_notes_ceiling(void)
{
  dir_make();
  char path[600];
  snprintf(path, sizeof path, "%s/scts_floor", dir);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("500\n", f);
  fclose(f);
  struct collector c = { 0 };
  struct spool *s = open_with(&c, 0, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(spool_previous_floor(s), 500);
  CU_ASSERT_EQUAL(spool_previous_scts_ceiling(s), 0);
  struct core core;
  memset(&core, 0, sizeof core);
  core.spool = s;
  core.log = log_category("emg.test");
  pthread_mutex_init(&core.scts_note_lock, NULL);
  CU_ASSERT_EQUAL(core_scts_note(&core, 1000), 0);
  CU_ASSERT_EQUAL(core_scts_handing(&core, 999), 0);
  CU_ASSERT_EQUAL(core_scts_handing(&core, 1000), 0);
  CU_ASSERT_EQUAL(atomic_load(&core.scts_noted), 1000);   /* at the ceiling: no note */
  CU_ASSERT_EQUAL(core_scts_handing(&core, 1030), 0);     /* 30 s past it: noted first */
  CU_ASSERT_EQUAL(atomic_load(&core.scts_noted), 1030 + CORE_SCTS_NOTE_STEP_S);
  core_scts_note_ahead(&core);                            /* not within the lead of it yet */
  CU_ASSERT_EQUAL(atomic_load(&core.scts_noted), 1030 + CORE_SCTS_NOTE_STEP_S);
  CU_ASSERT_EQUAL(core_scts_handing(&core, 1033), 0);     /* below it: handed at once */
  CU_ASSERT_EQUAL(atomic_load(&core.scts_noted), 1030 + CORE_SCTS_NOTE_STEP_S);
  core_scts_note_ahead(&core);                            /* now within the lead: noted ahead */
  CU_ASSERT_EQUAL(atomic_load(&core.scts_noted), 1033 + CORE_SCTS_NOTE_LEAD_S + CORE_SCTS_NOTE_STEP_S);
  s = spool_restart(s, &c, 0, false);
  CU_ASSERT_EQUAL(spool_previous_scts_ceiling(s), 1033 + CORE_SCTS_NOTE_LEAD_S + CORE_SCTS_NOTE_STEP_S);
  CU_ASSERT_EQUAL(spool_previous_floor(s), 0);   /* the earlier version's file went */
  core.started = 900;
  core_set_scts_floor(&core, spool_previous_write(s), spool_previous_floor(s), spool_previous_scts_ceiling(s));
  CU_ASSERT_EQUAL(core.scts_floor, 1033 + CORE_SCTS_NOTE_LEAD_S + CORE_SCTS_NOTE_STEP_S + 1);
  pthread_mutex_destroy(&core.scts_note_lock);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

/* A segment written before records were seeded with their segment's number
 * (CRC seed 0) still replays; it is deleted, never reused. */
static void test_unseeded_segment(void)
{
  dir_make();
  uint8_t rec[24] = { 0 };
  const uint32_t magic = 0x4c505345u, len = 8;
  const uint64_t mark = 777;
  memcpy(rec, &magic, 4);   /* the fields are little-endian, as this machine */
  memcpy(rec + 8, &len, 4);
  rec[12] = SPOOL_REC_IDS;
  memcpy(rec + 16, &mark, 8);
  uint32_t crc = crc32c(0, rec + 8, 16);
  memcpy(rec + 4, &crc, 4);
  char path[600];
  snprintf(path, sizeof path, "%s/000000000001.seg", dir);
  int fd = open(path, O_WRONLY | O_CREAT, 0644);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(write(fd, rec, sizeof rec), (ssize_t)sizeof rec);
  close(fd);

  struct collector c = { 0 };
  struct spool *s = open_with(&c, 8192, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(c.n, 1);
  CU_ASSERT_EQUAL(c.recs[0].type, SPOOL_REC_IDS);
  CU_ASSERT_EQUAL(c.recs[0].id, 777);
  struct spool_stats st;
  stats_wait(s, &st, 1);
  CU_ASSERT_EQUAL(dir_count(".free"), 0);   /* deleted, not kept for reuse */
  CU_ASSERT_EQUAL(access(path, F_OK), -1);
  uint64_t t = append_msg(s, 800);
  CU_ASSERT(wait_durable(s, t));
  s = spool_restart(s, &c, 8192, false);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 1);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

/* The standard check value, and the CPU's instruction (when used) agreeing
 * with the tables at every length and alignment, since a journal written on
 * one machine must read on another. */
static void test_crc32c(void)
{
  CU_ASSERT_EQUAL(crc32c(0, "123456789", 9), 0xe3069283u);
  CU_ASSERT_EQUAL(crc32c_portable(0, "123456789", 9), 0xe3069283u);
  CU_ASSERT_EQUAL(crc32c(0, "", 0), 0);
  uint8_t data[300];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 131 + 7);
  for (size_t off = 0; off < 8; off++)
    for (size_t n = 0; n + off <= sizeof data; n += 13)
      CU_ASSERT_EQUAL_FATAL(crc32c(0, data + off, n), crc32c_portable(0, data + off, n));
  /* continuing a sum equals summing at once */
  CU_ASSERT_EQUAL(crc32c(crc32c(0, data, 100), data + 100, 200), crc32c(0, data, 300));
}

/* Segments bigger than compaction's 1 MiB reads: records cut at a read's
 * end are picked up whole by the next, and nothing live is lost. */
static void test_compaction_in_parts(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_with_msgs(&c, 3u << 20, 24000);
  struct spool_stats st;
  finish_and_compact(s, &st, 2u << 20);
  /* About 7.5 MB went in; what stays is the newest segment (never
   * compacted: it is being written) with the copies of the older ones' few
   * live records. */
  CU_ASSERT(st.disk_bytes - st.spare_bytes < 2u << 20);
  CU_ASSERT_EQUAL(st.segments, 1);
  CU_ASSERT(st.compacted > 0);
  CU_ASSERT_EQUAL(st.live_messages, 24);
  spool_close(s);

  s = open_with(&c, 3u << 20, false);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 24);
  bool intact = true;
  for (size_t i = 0; i < c.n; i++)
    if (c.recs[i].type == SPOOL_REC_MSG) {
      struct msg m;
      msg_make(&m, c.recs[i].id);
      intact &= c.recs[i].id % 1000 == 0 && c.recs[i].msg && msg_equal(c.recs[i].msg, &m);
    }
  CU_ASSERT(intact);
  spool_close(s);
  collector_reset(&c);
  dir_remove();
}

/* ---- credit ---- */

/* Calls fn(ctx, record, payload length) for each record of segment file
 * path (number seq) that replay would take after a crash: the valid ones
 * up to the first that is not (zeros ahead, a reused file's old records). */
static void seg_records(const char *path, uint32_t seq, void (*fn)(void *, const uint8_t *, uint32_t), void *ctx)
{
  int fd = open(path, O_RDONLY);
  struct stat st;
  uint8_t *buf = NULL;
  if (fd >= 0 && fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1)) &&
      pread(fd, buf, (size_t)st.st_size, 0) == st.st_size) {
    for (size_t off = 0, size = (size_t)st.st_size; off + 24 <= size;) {
      uint32_t magic, crc, len;   /* little-endian, as this machine */
      memcpy(&magic, buf + off, 4);
      memcpy(&crc, buf + off + 4, 4);
      memcpy(&len, buf + off + 8, 4);
      if (magic != 0x4c505345u || len < 8 || len > size - off - 16 || crc32c(seq, buf + off + 8, 8 + len) != crc)
        break;
      fn(ctx, buf + off, len);
      off += 16 + len;
    }
  }
  free(buf);
  if (fd >= 0)
    close(fd);
}

#define CREDIT_SET 1000000
#define CREDIT_IDS 600

/* One account's credit, kept as the accounts module keeps it, and what the
 * test saw of the spool's files. Journal replay gives back live messages
 * only, so the files are read here to see the finished ones too. */
struct credit_book {
  pthread_mutex_t lock;
  pthread_t opener;               /* the test's thread: calls on it come from spool_open */
  uint32_t epoch;                 /* tags the parts taken now */
  int64_t left;
  bool emit;                      /* false: no account has credit, the hook emits nothing */
  unsigned calls, calls_opening, checks;
  uint32_t emitted_opening;       /* the epoch of the last snapshot emitted from spool_open */
  uint32_t tag[CREDIT_IDS + 1];   /* by message id: the epoch it was taken in */
  bool seen[CREDIT_IDS + 1];      /* its MSG record was on disk at some check */
  bool present[CREDIT_IDS + 1], last[CREDIT_IDS + 1];   /* at this check, at the one before */
  uint32_t credit_max, last_max;  /* the newest CREDIT epoch on disk, now and at the check before */
  /* MSG records gone from disk that no CREDIT record there covers (a
   * crash now would lose their credit), and those that went while only
   * the CREDIT records of the check before were on disk and did not cover
   * them (their snapshot was not durable yet). */
  unsigned uncovered, early;
};

static void book_record(void *ctx, const uint8_t *rec, uint32_t len)
{
  struct credit_book *b = ctx;
  uint64_t id;
  uint32_t epoch;
  memcpy(&id, rec + 16, 8);
  memcpy(&epoch, rec + 16 + len - 4, 4);   /* a CREDIT payload ends with its epoch */
  if (rec[12] == SPOOL_REC_MSG && id <= CREDIT_IDS)
    b->present[id] = true;
  if (rec[12] == SPOOL_REC_CREDIT && epoch > b->credit_max)
    b->credit_max = epoch;
}

/* Reads the files as a crash now would leave them: the writer, which calls
 * this from the hook and at each commit (once written, before anything is
 * deleted), changes nothing meanwhile. b->lock held. */
static void book_check(struct credit_book *b)
{
  memcpy(b->last, b->present, sizeof b->last);
  memset(b->present, 0, sizeof b->present);
  b->last_max = b->credit_max;
  b->credit_max = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (strlen(de->d_name) == 16 && strcmp(de->d_name + 12, ".seg") == 0)
      seg_records(path, (uint32_t)strtoul(de->d_name, NULL, 10), book_record, b);
  }
  if (d)
    closedir(d);
  for (size_t id = 1; id <= CREDIT_IDS; id++) {
    if (b->seen[id] && !b->present[id]) {
      b->uncovered += b->tag[id] > b->credit_max;
      b->early += b->last[id] && b->tag[id] > b->last_max;
    }
    b->seen[id] |= b->present[id];
  }
  b->checks++;
}

static void book_snapshot(void *ctx, void (*emit)(void *, const struct spool_record *), void *emit_ctx)
{
  struct credit_book *b = ctx;
  pthread_mutex_lock(&b->lock);
  b->calls++;
  book_check(b);
  bool opening = pthread_equal(pthread_self(), b->opener);
  if (opening) {
    b->calls_opening++;
    b->credit_max = UINT32_MAX;   /* the first commit may come before the listener is there */
  }
  if (b->emit) {
    emit(emit_ctx, &(struct spool_record){ .type = SPOOL_REC_CREDIT, .user = "acme", .credit_set = CREDIT_SET,
                                           .credit_left = b->left, .credit_epoch = b->epoch });
    if (opening)
      b->emitted_opening = b->epoch;
    b->epoch++;
  }
  pthread_mutex_unlock(&b->lock);
}

static void book_durable(void *arg)
{
  struct credit_book *b = arg;
  pthread_mutex_lock(&b->lock);
  book_check(b);
  pthread_mutex_unlock(&b->lock);
}

static void book_init(struct credit_book *b, bool emit)
{
  memset(b, 0, sizeof *b);
  pthread_mutex_init(&b->lock, NULL);
  b->opener = pthread_self();
  b->epoch = 1;
  b->left = CREDIT_SET;
  b->emit = emit;
}

/* Takes message id's credit as the accounts module does, and appends it tagged. */
static uint64_t book_append(struct spool *s, struct credit_book *b, uint64_t id)
{
  struct msg m;
  msg_make(&m, id);
  pthread_mutex_lock(&b->lock);
  b->left--;
  b->tag[id] = m.credit_epoch = b->epoch;
  pthread_mutex_unlock(&b->lock);
  return spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = id, .target = 2, .msg = &m });
}

static struct spool *book_open(struct collector *c, struct credit_book *b)
{
  struct spool_options opt = { .segment_size = 8192, .compact_after_ms = 1, .credit_snapshot = book_snapshot,
                               .credit_ctx = b };
  char err[256] = "";
  collector_reset(c);
  struct spool *s = spool_open(dir, &opt, collect, collect_warn, c, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(spool_on_durable(s, book_durable, b), 0);
  return s;
}

/* Stops s and reads its files as they are left. */
static void book_close(struct spool *s, struct credit_book *b)
{
  spool_close(s);
  book_check(b);
}

/* What a start replayed, against the files the last stop left: the newest
 * snapshot covers every MSG record gone, and with those still there gives
 * what is left (the sum the accounts module makes); live messages kept
 * their tags, through compaction too. Returns the newest epoch. */
static uint32_t book_replayed(const struct credit_book *b, const struct collector *c)
{
  const struct replayed *snap = NULL;
  for (size_t i = 0; i < c->n; i++) {
    const struct replayed *r = &c->recs[i];
    if (r->type == SPOOL_REC_CREDIT) {
      CU_ASSERT_STRING_EQUAL(r->user, "acme");
      CU_ASSERT_EQUAL(r->credit_set, CREDIT_SET);
      if (!snap || r->credit_epoch > snap->credit_epoch)
        snap = r;
    } else if (r->type == SPOOL_REC_MSG) {
      CU_ASSERT(r->msg && r->msg->credit_epoch == b->tag[r->id]);
    }
  }
  CU_ASSERT_PTR_NOT_NULL_FATAL(snap);
  int64_t later = 0;
  unsigned lost = 0;
  for (size_t id = 1; id <= CREDIT_IDS; id++)
    if (b->tag[id] > snap->credit_epoch) {
      later += b->present[id];
      lost += !b->present[id];
    }
  CU_ASSERT_EQUAL(lost, 0);
  CU_ASSERT_EQUAL(snap->credit_left - later, b->left);
  return snap->credit_epoch;
}

/* A MSG record carries its credit epoch only when it has one (a flag and
 * four bytes before the callback: one without is as before), and a CREDIT
 * record all of its fields, in journal order, with id 0. */
static void rec_shape(void *ctx, const uint8_t *rec, uint32_t len)
{
  uint32_t *shape = ctx;   /* by id (< 32): payload length, flags << 24 */
  uint64_t id;
  memcpy(&id, rec + 16, 8);
  if (rec[12] == SPOOL_REC_MSG && id < 32)
    shape[id] = len | (uint32_t)rec[13] << 24;
}

static void test_credit_roundtrip(void)
{
  struct collector c = { 0 };
  struct spool *s = spool_fresh(&c, 0, false);
  struct msg tagged, with_callback;
  msg_make(&tagged, 11);
  tagged.credit_epoch = 0xfffffffeu;
  msg_make(&with_callback, 12);
  with_callback.credit_epoch = 5;
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 11, .target = 2,
                                                     .msg = &tagged }) > 0);
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 12, .target = 2,
                                                     .msg = &with_callback }) > 0);
  CU_ASSERT(append_msg(s, 21) > 0);   /* shaped as 11, without a tag */
  CU_ASSERT(spool_append(s, &(struct spool_record){ .type = SPOOL_REC_CREDIT, .user = "acme", .credit_set = INT64_MAX,
                                                     .credit_left = -3, .credit_epoch = 0xffffffffu }) > 0);
  uint64_t t = spool_append(s, &(struct spool_record){ .type = SPOOL_REC_CREDIT, .user = "b", .credit_set = 40,
                                                        .credit_left = 0, .credit_epoch = 1 });
  CU_ASSERT(wait_durable(s, t));
  s = spool_restart(s, &c, 0, false);
  CU_ASSERT_EQUAL(c.warnings, 0);
  /* Each tagged MSG comes with a CREDIT_PART first: its account and tag. */
  CU_ASSERT_EQUAL_FATAL(c.n, 8);
  CU_ASSERT(c.recs[0].type == SPOOL_REC_CREDIT_PART && c.recs[0].credit_epoch == tagged.credit_epoch);
  CU_ASSERT_STRING_EQUAL(c.recs[0].user, tagged.origin.user);
  CU_ASSERT(c.recs[2].type == SPOOL_REC_CREDIT_PART && c.recs[2].credit_epoch == 5);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_CREDIT_PART), 2);
  size_t kept = 0;
  for (size_t i = 0; i < c.n; i++)
    if (c.recs[i].type != SPOOL_REC_CREDIT_PART)
      c.recs[kept++] = c.recs[i];
  c.n = kept;
  CU_ASSERT_EQUAL_FATAL(c.n, 6);   /* MSG 11, 12, 21, CREDIT acme, b, IDS */
  struct msg m;
  CU_ASSERT(c.recs[0].id == 11 && c.recs[0].msg && msg_equal(c.recs[0].msg, &tagged));
  CU_ASSERT(c.recs[1].id == 12 && c.recs[1].msg && msg_equal(c.recs[1].msg, &with_callback));
  msg_make(&m, 21);
  CU_ASSERT(c.recs[2].id == 21 && c.recs[2].msg && msg_equal(c.recs[2].msg, &m));
  CU_ASSERT(c.recs[2].msg && c.recs[2].msg->credit_epoch == 0);
  const struct replayed *a = &c.recs[3], *b = &c.recs[4];
  CU_ASSERT(a->type == SPOOL_REC_CREDIT && a->id == 0);
  CU_ASSERT_STRING_EQUAL(a->user, "acme");
  CU_ASSERT(a->credit_set == INT64_MAX && a->credit_left == -3 && a->credit_epoch == 0xffffffffu);
  CU_ASSERT(b->type == SPOOL_REC_CREDIT && b->id == 0);
  CU_ASSERT_STRING_EQUAL(b->user, "b");
  CU_ASSERT(b->credit_set == 40 && b->credit_left == 0 && b->credit_epoch == 1);
  CU_ASSERT_EQUAL(c.recs[5].type, SPOOL_REC_IDS);
  CU_ASSERT_EQUAL(c.recs[5].id, 21);   /* CREDIT records name no id */
  spool_close(s);
  char names[8][600];
  uint64_t bytes;
  uint32_t shape[32] = { 0 };
  CU_ASSERT_FATAL(dir_segments(names, 8, &bytes) >= 1);
  seg_records(names[0], (uint32_t)strtoul(strrchr(names[0], '/') + 1, NULL, 10), rec_shape, shape);
  CU_ASSERT_EQUAL(shape[21] >> 24, 0);
  CU_ASSERT_EQUAL(shape[11] >> 24, 0x04);
  CU_ASSERT_EQUAL(shape[11] & 0xffffff, (shape[21] & 0xffffff) + 4);
  collector_reset(&c);
  dir_remove();
}

/* Before anything leaves the disk, a snapshot of the credit is durable:
 * at every commit and every call of the hook, the files as a crash would
 * leave them hold a CREDIT record covering every tagged MSG record gone,
 * and none went before the snapshot covering it was written. Segments go
 * by deletion and by compaction, and at a start. */
static void test_credit_snapshots(void)
{
  static struct credit_book b;
  book_init(&b, true);
  struct collector c = { 0 };
  dir_make();
  struct spool *s = book_open(&c, &b);
  struct spool_stats st;
  uint64_t t = 0, id = 0;
  CU_ASSERT_EQUAL(b.calls, 0);   /* a new spool: nothing to delete */
  /* A first lot goes in rounds of 30, each finishing once the next is in:
   * whole segments go while newer messages are tagged. */
  for (int round = 0; round <= 10; round++) {
    uint64_t done = id;   /* the last of the round before */
    while (round < 10 && id < done + 30)
      if ((t = book_append(s, &b, ++id)) && id % 10 == 0)
        wait_durable(s, t);   /* small batches: many segments */
    for (uint64_t k = done > 30 ? done - 29 : 1; k <= done; k++)
      t = append_id(s, SPOOL_REC_FINISHED, k);
    CU_ASSERT(wait_durable(s, t));
  }
  stats_wait(s, &st, 1);
  CU_ASSERT(st.segments_deleted > 5);
  /* Of a second lot one in fifty stays: compaction copies them out first. */
  while (id < CREDIT_IDS)
    if ((t = book_append(s, &b, ++id)) && id % 20 == 0)
      wait_durable(s, t);
  for (uint64_t k = 301; k <= CREDIT_IDS; k++)
    if (k % 50)
      t = append_id(s, SPOOL_REC_FINISHED, k);
  CU_ASSERT(wait_durable(s, t));
  for (int i = 0; i < 6000; i++) {   /* up to 60 s, as test_compaction */
    spool_stats(s, &st);
    if (st.segments == 1 && st.compacted > 0)
      break;
    sleep_ms(10);
  }
  CU_ASSERT_EQUAL(st.segments, 1);
  CU_ASSERT(st.compacted > 0);
  book_close(s, &b);
  CU_ASSERT(b.calls >= 3 && b.checks >= 40);
  CU_ASSERT_EQUAL(b.calls_opening, 0);

  s = book_open(&c, &b);
  CU_ASSERT_EQUAL(c.warnings, 0);
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 6);
  book_replayed(&b, &c);
  /* The rest finish; the last segment left is dead at the next start,
   * which asks for a snapshot itself before it deletes it. */
  for (uint64_t k = 350; k <= CREDIT_IDS; k += 50)
    t = append_id(s, SPOOL_REC_FINISHED, k);
  CU_ASSERT(wait_durable(s, t));
  stats_wait(s, &st, 1);
  book_close(s, &b);
  s = book_open(&c, &b);
  CU_ASSERT_EQUAL(b.calls_opening, 1);
  uint32_t at_open = b.emitted_opening;
  CU_ASSERT_EQUAL(count_type(&c, SPOOL_REC_MSG), 0);
  book_replayed(&b, &c);
  stats_wait(s, &st, 1);
  CU_ASSERT_EQUAL(st.segments, 1);
  book_close(s, &b);
  s = book_open(&c, &b);
  CU_ASSERT(book_replayed(&b, &c) >= at_open);
  spool_close(s);
  CU_ASSERT(b.checks >= 60);
  CU_ASSERT_EQUAL(b.uncovered, 0);
  CU_ASSERT_EQUAL(b.early, 0);
  pthread_mutex_destroy(&b.lock);
  collector_reset(&c);
  dir_remove();
}

/* A hook that emits nothing (no account has credit) costs nothing: the
 * same commits, records and bytes as no hook, and the segments go. */
static void test_credit_none(void)
{
  static struct credit_book b;
  struct spool_stats st[2];
  for (int run = 0; run < 2; run++) {
    book_init(&b, false);
    dir_make();
    /* No compaction under load: one record per commit, then one commit
     * finishing them all, so that no segment is ever partly live and both
     * runs commit the same. */
    struct spool_options opt = { .segment_size = 8192, .compact_after_ms = 3600000, .sync = true,
                                 .credit_snapshot = run ? book_snapshot : NULL, .credit_ctx = &b };
    struct collector c = { 0 };
    char err[256] = "";
    struct spool *s = spool_open(dir, &opt, collect, collect_warn, &c, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    for (uint64_t id = 1; id <= 120; id++)
      CU_ASSERT(wait_durable(s, append_msg(s, id)));
    struct spool_batch batch = { { NULL, 0, 0 }, 0 };
    for (uint64_t id = 1; id <= 120; id++)
      CU_ASSERT(spool_batch_add(s, &batch, &(struct spool_record){ .type = SPOOL_REC_FINISHED, .id = id }) == 0);
    CU_ASSERT(wait_durable(s, spool_batch_append(s, &batch)));
    spool_batch_free(&batch);
    stats_wait(s, &st[run], 1);
    spool_close(s);
    collector_reset(&c);
    dir_remove();
    pthread_mutex_destroy(&b.lock);
  }
  CU_ASSERT(b.calls > 0);   /* asked, in the second run */
  CU_ASSERT(st[0].segments_deleted > 2);
  CU_ASSERT_EQUAL(st[1].segments_deleted, st[0].segments_deleted);
  CU_ASSERT_EQUAL(st[1].fsyncs, st[0].fsyncs);
  CU_ASSERT_EQUAL(st[1].records, st[0].records);
  CU_ASSERT_EQUAL(st[1].bytes, st[0].bytes);
}

void suite_spool(void);
void suite_spool(void)
{
  static const struct test_case cases[] = {
    { "CRC-32C check value, instruction equals tables", test_crc32c },
    { "records come back intact and only while live", test_roundtrip },
    { "durable ticket and listeners", test_durable_listeners },
    { "torn tail cut off", test_torn_tail },
    { "corruption in the middle skipped and reported", test_corruption_middle },
    { "finished segments deleted", test_segments_deleted },
    { "deleted segments' files reused, their old records never replayed", test_segments_reused },
    { "a segment without CRC seed still replays", test_unseeded_segment },
    { "zeros written ahead, cut quietly after a crash", test_zeros_ahead },
    { "the SCTS ceiling noted for the next process", test_ceiling_noted },
    { "the core notes the SCTS ceiling ahead of its stamps", test_core_notes_ceiling },
    { "a moved message replays at its new connector", test_moved_messages },
    { "compaction keeps disk use bounded", test_compaction },
    { "compaction reads big segments in parts", test_compaction_in_parts },
    { "compaction passes over damage bigger than its buffer", test_compaction_over_damage },
    { "credit epochs and CREDIT records round-trip", test_credit_roundtrip },
    { "a durable credit snapshot covers whatever is deleted", test_credit_snapshots },
    { "a credit hook that emits nothing costs nothing", test_credit_none },
    { "disk full: refuse, then resume", test_disk_full },
    { NULL, NULL },
  };
  test_add_suite("spool", cases);
}
