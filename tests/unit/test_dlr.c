/* test_dlr.c - the DLR table: matching, replacing, eviction, expiry,
 * counters, id normalisation, concurrent use, and a randomised run against a
 * plain model that drives the ring through wraps, holes and repacks.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "dlr.h"
#include "testutil.h"

static void info_make(struct dlr_info *info, uint64_t msg_id)
{
  memset(info, 0, sizeof *info);
  info->msg_id = msg_id;
  info->origin_connector = 3;
  info->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  info->submit_time = 1764480000 + (int64_t)msg_id;
  snprintf(info->origin_user, sizeof info->origin_user, "load");
  snprintf(info->origin_ref, sizeof info->origin_ref, "4917612345678:2611300535%02u",
           (unsigned)(msg_id % 100));
  snprintf(info->src.addr, sizeof info->src.addr, "4912345678901");
  info->src.ton = MSG_TON_INTERNATIONAL;
  info->src.npi = 1;
  snprintf(info->dst.addr, sizeof info->dst.addr, "4917612345678");
  info->dst.ton = MSG_TON_NATIONAL;
  info->dst.npi = 1;
}

/* Field by field: a struct compare would also compare padding and the
 * bytes after each string's NUL, which the table does not keep. */
static bool info_equal(const struct dlr_info *a, const struct dlr_info *b)
{
  return a->msg_id == b->msg_id && a->origin_connector == b->origin_connector &&
         a->dlr_mask == b->dlr_mask && a->submit_time == b->submit_time &&
         strcmp(a->origin_user, b->origin_user) == 0 && strcmp(a->origin_ref, b->origin_ref) == 0 &&
         strcmp(a->src.addr, b->src.addr) == 0 && a->src.ton == b->src.ton &&
         a->src.npi == b->src.npi && strcmp(a->dst.addr, b->dst.addr) == 0 &&
         a->dst.ton == b->dst.ton && a->dst.npi == b->dst.npi &&
         a->callback_method == b->callback_method && strcmp(a->callback, b->callback) == 0;
}

static void test_insert_lookup_remove(void)
{
  struct dlrtab *t = dlrtab_create(1000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  info_make(&in, 42);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "1087269843", &in, 1000), 0);
  memset(&out, 0xa5, sizeof out);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "1087269843", true, &out), 1);
  CU_ASSERT(info_equal(&in, &out));
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "1087269843", true, &out), 0);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.size, 1000);
  CU_ASSERT_EQUAL(st.used, 0);
  CU_ASSERT_EQUAL(st.inserted, 1);
  CU_ASSERT_EQUAL(st.matched, 1);
  CU_ASSERT_EQUAL(st.unmatched, 1);
  CU_ASSERT_EQUAL(st.evicted + st.expired + st.replaced, 0);

  /* An HTTP origin's callback URL travels with the entry, at its full length. */
  info_make(&in, 43);
  in.callback_method = MSG_CALLBACK_GET;
  memset(in.callback, 'u', sizeof in.callback - 1);
  memcpy(in.callback, "http://127.0.0.1:9/dlr?s=%d&id=", 31);
  in.callback[sizeof in.callback - 1] = '\0';
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "cb1", &in, 1000), 0);
  memset(&out, 0xa5, sizeof out);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "cb1", true, &out), 1);
  CU_ASSERT(info_equal(&in, &out));
  CU_ASSERT_EQUAL(strlen(out.callback), MSG_CALLBACK_LEN - 1);
  dlrtab_destroy(t);
  CU_ASSERT_PTR_NULL(dlrtab_create(0, 3600));
}

static void test_keep_on_intermediate(void)
{
  struct dlrtab *t = dlrtab_create(1000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  info_make(&in, 7);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "abc", &in, 1000), 0);
  /* ENROUTE, then ACCEPTED-as-intermediate: the entry stays for the final one */
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "abc", false, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "abc", false, &out), 1);
  CU_ASSERT_EQUAL(out.msg_id, 7);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.used, 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "abc", true, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "abc", false, &out), 0);
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.used, 0);
  CU_ASSERT_EQUAL(st.matched, 3);
  CU_ASSERT_EQUAL(st.unmatched, 1);
  dlrtab_destroy(t);
}

static void test_connectors_distinct(void)
{
  struct dlrtab *t = dlrtab_create(1000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info a, b, out;
  info_make(&a, 1);
  info_make(&b, 2);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "5f3a9c01", &a, 1000), 0);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 2, "5f3a9c01", &b, 1000), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 3, "5f3a9c01", true, &out), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 2, "5f3a9c01", true, &out), 1);
  CU_ASSERT_EQUAL(out.msg_id, 2);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "5f3a9c01", true, &out), 1);
  CU_ASSERT_EQUAL(out.msg_id, 1);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.replaced, 0);
  CU_ASSERT_EQUAL(st.inserted, 2);
  dlrtab_destroy(t);
}

static void test_replace(void)
{
  struct dlrtab *t = dlrtab_create(1000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  info_make(&in, 1);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "77", &in, 1000), 0);
  info_make(&in, 2);
  snprintf(in.origin_user, sizeof in.origin_user, "a-longer-user-name");
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "77", &in, 1001), 0);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.used, 1);
  CU_ASSERT_EQUAL(st.replaced, 1);
  CU_ASSERT_EQUAL(st.inserted, 2);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "77", true, &out), 1);
  CU_ASSERT(info_equal(&in, &out));
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "77", true, &out), 0);
  dlrtab_destroy(t);
}

static void key_of(char *key, size_t cap, unsigned i)
{
  snprintf(key, cap, "id%u", i);
}

static void test_evict_oldest(void)
{
  /* below 8192 entries: one shard, so "oldest" is exact */
  struct dlrtab *t = dlrtab_create(100, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  char key[16];
  for (unsigned i = 0; i < 150; i++) {
    info_make(&in, i);
    key_of(key, sizeof key, i);
    CU_ASSERT_EQUAL(dlrtab_insert(t, 1, key, &in, 1000), 0);
  }
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.used, 100);
  CU_ASSERT_EQUAL(st.evicted, 50);
  CU_ASSERT_EQUAL(st.inserted, 150);
  /* 0..49 went; a hole in the middle (70) makes room without evicting */
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id49", false, &out), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id50", false, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id70", true, &out), 1);
  info_make(&in, 150);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "id150", &in, 1000), 0);
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.evicted, 50);
  /* a replaced entry becomes the youngest: 50 is no longer the oldest */
  info_make(&in, 50);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "id50", &in, 1000), 0);
  info_make(&in, 151);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "id151", &in, 1000), 0);
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.evicted, 51);
  CU_ASSERT_EQUAL(st.used, 100);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id51", false, &out), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id50", false, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id52", false, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id151", false, &out), 1);
  dlrtab_destroy(t);

  /* a table of one */
  t = dlrtab_create(1, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "a", &in, 1000), 0);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "b", &in, 1000), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "a", false, &out), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "b", false, &out), 1);
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.evicted, 1);
  dlrtab_destroy(t);
}

static void test_capacity_over_shards(void)
{
  /* 10000 entries make two shards; the capacity is still exactly the table's */
  struct dlrtab *t = dlrtab_create(10000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  char key[16];
  unsigned failed = 0;
  for (unsigned i = 0; i < 10500; i++) {
    info_make(&in, i);
    key_of(key, sizeof key, i);
    failed += dlrtab_insert(t, 1, key, &in, 1000) != 0;
    if (i == 9999) {
      struct dlr_stats st;
      dlrtab_stats(t, &st);
      CU_ASSERT_EQUAL(st.used, 10000);
      CU_ASSERT_EQUAL(st.evicted, 0);
    }
  }
  CU_ASSERT_EQUAL(failed, 0);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.used, 10000);
  CU_ASSERT_EQUAL(st.evicted, 500);
  /* the newest are all there: each shard evicted its own oldest */
  unsigned found = 0;
  for (unsigned i = 10000; i < 10500; i++) {
    key_of(key, sizeof key, i);
    found += dlrtab_lookup(t, 1, key, false, &out);
  }
  CU_ASSERT_EQUAL(found, 500);
  dlrtab_destroy(t);
}

static void test_expire(void)
{
  struct dlrtab *t = dlrtab_create(1000, 10);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  info_make(&in, 1);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "a", &in, 100), 0);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "b", &in, 105), 0);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "c", &in, 105), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "b", true, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_expire(t, 110), 0);   /* exactly ttl old: not older */
  CU_ASSERT_EQUAL(dlrtab_expire(t, 111), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "a", false, &out), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "c", false, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_expire(t, 90), 0);    /* the clock stepped back */
  CU_ASSERT_EQUAL(dlrtab_expire(t, 116), 1);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.expired, 2);
  CU_ASSERT_EQUAL(st.used, 0);
  dlrtab_destroy(t);

  /* ttl 0: kept until matched */
  t = dlrtab_create(1000, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "a", &in, 100), 0);
  CU_ASSERT_EQUAL(dlrtab_expire(t, 100 + 10 * 365 * 86400), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "a", true, &out), 1);
  dlrtab_destroy(t);
}

/* The drop handler hears of each entry that goes without its final receipt
 * (evicted, replaced by another message, expired, in batches past the
 * first), never of one matched or replaced by its own message again. */
struct drops_seen {
  uint64_t ids[2000];
  enum dlr_drop why[2000];
  uint16_t connector[2000];
  size_t n, calls;
};

static void note_drops(void *arg, const struct dlr_dropped *dropped, size_t n, enum dlr_drop why)
{
  struct drops_seen *d = arg;
  for (size_t i = 0; i < n && d->n < sizeof d->ids / sizeof d->ids[0]; i++) {
    d->why[d->n] = why;
    d->connector[d->n] = dropped[i].out_connector;
    d->ids[d->n++] = dropped[i].msg_id;
  }
  d->calls++;
}

static void test_drop_handler(void)
{
  struct dlrtab *t = dlrtab_create(1000, 10);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct drops_seen d = { .n = 0 };
  dlrtab_on_drop(t, note_drops, &d);
  struct dlr_info in, out;
  char key[16];
  for (unsigned i = 1; i <= 1000; i++) {
    info_make(&in, i);
    key_of(key, sizeof key, i);
    CU_ASSERT_EQUAL(dlrtab_insert(t, 1, key, &in, 100), 0);
  }
  CU_ASSERT_EQUAL(d.n, 0);
  /* matched (final and not): nothing dropped */
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id5", true, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "id6", false, &out), 1);
  /* the same message under its key again (a replayed copy): nothing */
  info_make(&in, 7);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "id7", &in, 100), 0);
  CU_ASSERT_EQUAL(d.n, 0);
  /* another message under a key in use: the first one is dropped */
  info_make(&in, 2001);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "id8", &in, 100), 0);
  CU_ASSERT_EQUAL(d.n, 1);
  CU_ASSERT_EQUAL(d.ids[0], 8);
  CU_ASSERT_EQUAL(d.why[0], DLR_DROP_REPLACED);
  CU_ASSERT_EQUAL(d.connector[0], 1);   /* the connector it was sent on */
  /* full (999 now, one place free): the second insert evicts the oldest, 1 */
  info_make(&in, 2002);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "new1", &in, 105), 0);
  CU_ASSERT_EQUAL(d.n, 1);
  info_make(&in, 2003);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "new2", &in, 105), 0);
  CU_ASSERT_EQUAL(d.n, 2);
  CU_ASSERT_EQUAL(d.ids[1], 1);
  CU_ASSERT_EQUAL(d.why[1], DLR_DROP_EVICTED);
  /* expiry: the 998 entries of time 100 (not the two of 105), over more
   * than one call of the handler: 2..1000 but 5 (matched) and 8 (replaced,
   * by message 2001, which goes instead) */
  d.calls = 0;
  CU_ASSERT_EQUAL(dlrtab_expire(t, 111), 998);
  CU_ASSERT_EQUAL(d.n, 2 + 998);
  CU_ASSERT(d.calls >= 2);
  bool seen[2002] = { false };
  for (size_t i = 2; i < d.n; i++)
    if (d.ids[i] < 2002)
      seen[d.ids[i]] = true;
  unsigned expected = 0;
  for (unsigned id = 2; id <= 1000; id++)
    expected += seen[id] == (id != 5 && id != 8);
  CU_ASSERT_EQUAL(expected, 999);
  CU_ASSERT(d.why[2] == DLR_DROP_EXPIRED && d.why[d.n - 1] == DLR_DROP_EXPIRED);
  CU_ASSERT(seen[2001]);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "new1", false, &out), 1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "new2", false, &out), 1);
  dlrtab_destroy(t);
}

static void test_unmatched_and_bad_ids(void)
{
  struct dlrtab *t = dlrtab_create(1000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  info_make(&in, 1);
  char too_long[DLR_ID_LEN + 1];
  memset(too_long, '7', DLR_ID_LEN);
  too_long[DLR_ID_LEN] = '\0';
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "", &in, 1000), -1);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, too_long, &in, 1000), -1);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "nope", true, &out), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "", true, &out), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, too_long, false, &out), 0);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.unmatched, 3);
  CU_ASSERT_EQUAL(st.inserted, 0);
  CU_ASSERT_EQUAL(st.used, 0);
  dlrtab_destroy(t);
}

static void test_maxima_preserved(void)
{
  struct dlrtab *t = dlrtab_create(1000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct dlr_info in, out;
  info_make(&in, UINT64_MAX);
  in.submit_time = INT64_MIN;
  in.origin_connector = UINT16_MAX;
  in.dlr_mask = 0xff;
  in.src.ton = in.src.npi = in.dst.ton = in.dst.npi = 0xff;
  /* every string one short of its array, each with its own characters */
  memset(in.origin_user, 'u', sizeof in.origin_user - 1);
  memset(in.origin_ref, 'r', sizeof in.origin_ref - 1);
  memset(in.src.addr, 's', sizeof in.src.addr - 1);
  memset(in.dst.addr, 'd', sizeof in.dst.addr - 1);
  in.origin_user[0] = in.origin_ref[0] = in.src.addr[0] = in.dst.addr[0] = '<';
  in.origin_user[sizeof in.origin_user - 2] = in.origin_ref[sizeof in.origin_ref - 2] = '>';
  in.src.addr[sizeof in.src.addr - 2] = in.dst.addr[sizeof in.dst.addr - 2] = '>';
  char key[DLR_ID_LEN];
  memset(key, 'k', sizeof key - 1);
  key[sizeof key - 1] = '\0';
  key[0] = '<';
  CU_ASSERT_EQUAL(dlrtab_insert(t, UINT16_MAX, key, &in, 1000), 0);
  memset(&out, 0, sizeof out);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, UINT16_MAX, key, true, &out), 1);
  CU_ASSERT(info_equal(&in, &out));
  CU_ASSERT_EQUAL(strlen(out.origin_ref), MSG_ID_LEN - 1);
  CU_ASSERT_EQUAL(strlen(out.dst.addr), MSG_ADDR_LEN - 1);

  /* unterminated arrays are cut at their size - 1, never overrun */
  memset(in.origin_user, 'x', sizeof in.origin_user);
  CU_ASSERT_EQUAL(dlrtab_insert(t, 1, "z", &in, 1000), 0);
  CU_ASSERT_EQUAL(dlrtab_lookup(t, 1, "z", true, &out), 1);
  CU_ASSERT_EQUAL(strlen(out.origin_user), MSG_USER_LEN - 1);
  dlrtab_destroy(t);
}

struct norm_case {
  enum dlr_id_type type;
  const char *id;
  const char *want;  /* NULL: -1 */
};

static void test_normalize(void)
{
  static const struct norm_case cases[] = {
    { DLR_ID_STRING, "00AbC1", "abc1" },
    { DLR_ID_STRING, "000", "0" },
    { DLR_ID_STRING, "0", "0" },
    { DLR_ID_STRING, "Msg-ID_0A", "msg-id_0a" },
    { DLR_ID_STRING, "", NULL },
    { DLR_ID_DECIMAL, "0001234", "1234" },
    { DLR_ID_DECIMAL, "000", "0" },
    { DLR_ID_DECIMAL, "18446744073709551616", "18446744073709551616" },   /* past 64 bits */
    { DLR_ID_DECIMAL, "00123456789012345678901234567890", "123456789012345678901234567890" },
    { DLR_ID_DECIMAL, "12a", NULL },
    { DLR_ID_DECIMAL, " 12", NULL },
    { DLR_ID_DECIMAL, "-1", NULL },
    { DLR_ID_DECIMAL, "", NULL },
    { DLR_ID_HEX, "ff", "255" },
    { DLR_ID_HEX, "00FF", "255" },
    { DLR_ID_HEX, "000", "0" },
    { DLR_ID_HEX, "5f3a9c01", "1597676545" },
    { DLR_ID_HEX, "3B9ACA00", "1000000000" },   /* one limb carries into the next */
    { DLR_ID_HEX, "ffffffffffffffff", "18446744073709551615" },
    { DLR_ID_HEX, "10000000000000000", "18446744073709551616" },
    { DLR_ID_HEX, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
      "115792089237316195423570985008687907853269984665640564039457584007913129639935" },
    { DLR_ID_HEX, "0x1f", NULL },
    { DLR_ID_HEX, "5f3g", NULL },
    { DLR_ID_HEX, "", NULL },
    { (enum dlr_id_type)7, "1", NULL },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[DLR_ID_LEN];
    int n = dlr_id_normalize(out, sizeof out, cases[i].id, cases[i].type);
    if (cases[i].want) {
      CU_ASSERT_EQUAL(n, (int)strlen(cases[i].want));
      CU_ASSERT_STRING_EQUAL(out, cases[i].want);
    } else {
      CU_ASSERT_EQUAL(n, -1);
    }
  }

  /* a submit response's hex id and a receipt's decimal id meet */
  char a[DLR_ID_LEN], b[DLR_ID_LEN];
  CU_ASSERT(dlr_id_normalize(a, sizeof a, "5F3A9C01", DLR_ID_HEX) > 0);
  CU_ASSERT(dlr_id_normalize(b, sizeof b, "01597676545", DLR_ID_DECIMAL) > 0);
  CU_ASSERT_STRING_EQUAL(a, b);
  CU_ASSERT(dlr_id_normalize(a, sizeof a, "10000000000000000", DLR_ID_HEX) > 0);
  CU_ASSERT(dlr_id_normalize(b, sizeof b, "018446744073709551616", DLR_ID_DECIMAL) > 0);
  CU_ASSERT_STRING_EQUAL(a, b);

  /* input length: 64 characters at most; the output must fit cap */
  char id[MSG_ID_LEN + 1];
  memset(id, '9', MSG_ID_LEN);
  id[MSG_ID_LEN - 1] = '\0';
  CU_ASSERT_EQUAL(dlr_id_normalize(a, sizeof a, id, DLR_ID_STRING), MSG_ID_LEN - 1);
  id[MSG_ID_LEN - 1] = '9';
  id[MSG_ID_LEN] = '\0';
  CU_ASSERT_EQUAL(dlr_id_normalize(a, sizeof a, id, DLR_ID_STRING), -1);
  CU_ASSERT_EQUAL(dlr_id_normalize(a, 6, "12345", DLR_ID_DECIMAL), 5);
  CU_ASSERT_EQUAL(dlr_id_normalize(a, 5, "12345", DLR_ID_DECIMAL), -1);
  CU_ASSERT_EQUAL(dlr_id_normalize(a, 4, "fff", DLR_ID_HEX), -1);   /* 4095 */
  CU_ASSERT_EQUAL(dlr_id_normalize(a, 5, "fff", DLR_ID_HEX), 4);
}

enum { THREADS = 4, PER_THREAD = 25000, LAG = 64 };

struct worker {
  struct dlrtab *t;
  unsigned id;
  unsigned failures;
};

static void *worker_run(void *arg)
{
  struct worker *w = arg;
  struct dlr_info in, out;
  char key[32];
  for (unsigned i = 0; i < PER_THREAD; i++) {
    info_make(&in, (uint64_t)w->id << 32 | i);
    snprintf(key, sizeof key, "t%u-%u", w->id, i);
    w->failures += dlrtab_insert(w->t, 1, key, &in, 1000) != 0;
    if (i >= LAG) {
      snprintf(key, sizeof key, "t%u-%u", w->id, i - LAG);
      w->failures += dlrtab_lookup(w->t, 1, key, false, &out) != 1 ||
                     out.msg_id != ((uint64_t)w->id << 32 | (i - LAG));
    }
  }
  for (unsigned i = 0; i < PER_THREAD; i++) {
    snprintf(key, sizeof key, "t%u-%u", w->id, i);
    w->failures += dlrtab_lookup(w->t, 1, key, true, &out) != 1 ||
                   out.msg_id != ((uint64_t)w->id << 32 | i);
    w->failures += dlrtab_lookup(w->t, 1, key, true, &out) != 0;
  }
  return NULL;
}

static void test_concurrent(void)
{
  /* large enough to be sharded, and for no shard to fill */
  struct dlrtab *t = dlrtab_create(200000, 3600);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  struct worker w[THREADS];
  pthread_t th[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    w[i] = (struct worker){ .t = t, .id = i };
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
  }
  for (unsigned i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(w[i].failures, 0);
  }
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.inserted, THREADS * PER_THREAD);
  CU_ASSERT_EQUAL(st.matched, THREADS * (2 * PER_THREAD - LAG));
  CU_ASSERT_EQUAL(st.unmatched, THREADS * PER_THREAD);
  CU_ASSERT_EQUAL(st.used, 0);
  CU_ASSERT_EQUAL(st.evicted + st.replaced + st.expired, 0);
  dlrtab_destroy(t);
}

/* The model: which keys are in, in what order, since when. */
enum { MODEL_KEYS = 2000, MODEL_OPS = 200000 };

struct model {
  uint64_t seq[MODEL_KEYS];     /* insertion number, 0 = absent */
  int64_t stamp[MODEL_KEYS];
  size_t count;
  uint64_t evicted, expired, replaced, matched, unmatched;
};

/* The strings of entry number seq. Spread: lengths all over, so records
 * differ in size and the ring wraps behind pads of every size. Otherwise
 * records of two sizes 8 bytes apart, so that a gap in the ring often is
 * exactly one record, or one record less 8 bytes. */
static void model_info(struct dlr_info *info, uint64_t seq, bool spread)
{
  memset(info, 0, sizeof *info);
  info->msg_id = seq;
  size_t lens[4] = { 8, 26 + 8 * (seq % 2), 13, 13 };
  if (spread) {
    lens[0] = seq % MSG_USER_LEN;
    lens[1] = seq * 7 % MSG_ID_LEN;
    lens[2] = seq * 3 % MSG_ADDR_LEN;
    lens[3] = seq * 5 % MSG_ADDR_LEN;
  }
  char *dst[4] = { info->origin_user, info->origin_ref, info->src.addr, info->dst.addr };
  for (int s = 0; s < 4; s++)
    for (size_t j = 0; j < lens[s]; j++)
      dst[s][j] = (char)('a' + (seq + j) % 26);
}

static void model_remove_oldest(struct model *m)
{
  size_t oldest = MODEL_KEYS;
  for (size_t k = 0; k < MODEL_KEYS; k++)
    if (m->seq[k] && (oldest == MODEL_KEYS || m->seq[k] < m->seq[oldest]))
      oldest = k;
  m->seq[oldest] = 0;
  m->count--;
}

/* Random inserts (half of the operations), final and intermediate lookups,
 * and expiry as time passes, on a one-shard table and on the model; every
 * answer and, at the end, every counter must agree. */
static void model_run(size_t size, uint32_t ttl_s, bool spread)
{
  static struct model m;
  memset(&m, 0, sizeof m);
  struct dlrtab *t = dlrtab_create(size, ttl_s);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  uint32_t rng = 12345;
  uint64_t seq = 0;
  int64_t now = 1000;
  unsigned mismatches = 0;
  for (unsigned op = 0; op < MODEL_OPS; op++) {
    rng = rng * 1103515245u + 12345u;
    unsigned pick = (rng >> 16) % 100, key = (rng >> 4) % MODEL_KEYS;
    char name[16];
    snprintf(name, sizeof name, "%08u", key * 7919);
    struct dlr_info in, out;
    if (pick < 50) {
      if (m.seq[key]) {
        m.replaced++;
        m.seq[key] = 0;
        m.count--;
      }
      if (m.count == size) {
        model_remove_oldest(&m);
        m.evicted++;
      }
      m.seq[key] = ++seq;
      m.stamp[key] = now;
      m.count++;
      model_info(&in, seq, spread);
      mismatches += dlrtab_insert(t, 1, name, &in, now) != 0;
    } else if (pick < 95) {
      bool remove = pick < 80;
      int found = dlrtab_lookup(t, 1, name, remove, &out);
      if (m.seq[key]) {
        m.matched++;
        model_info(&in, m.seq[key], spread);
        mismatches += found != 1 || !info_equal(&in, &out);
        if (remove) {
          m.seq[key] = 0;
          m.count--;
        }
      } else {
        m.unmatched++;
        mismatches += found != 0;
      }
    } else {
      now += (rng >> 8) % 2;
      size_t expired = 0;
      for (size_t k = 0; k < MODEL_KEYS; k++)
        if (m.seq[k] && now - m.stamp[k] > ttl_s) {
          m.seq[k] = 0;
          m.count--;
          expired++;
        }
      m.expired += expired;
      mismatches += dlrtab_expire(t, now) != expired;
    }
  }
  CU_ASSERT_EQUAL(mismatches, 0);
  struct dlr_stats st;
  dlrtab_stats(t, &st);
  CU_ASSERT_EQUAL(st.used, m.count);
  CU_ASSERT_EQUAL(st.inserted, seq);
  CU_ASSERT_EQUAL(st.evicted, m.evicted);
  CU_ASSERT_EQUAL(st.expired, m.expired);
  CU_ASSERT_EQUAL(st.replaced, m.replaced);
  CU_ASSERT_EQUAL(st.matched, m.matched);
  CU_ASSERT_EQUAL(st.unmatched, m.unmatched);
  /* the run must have gone down every path it checks */
  CU_ASSERT(m.evicted > 0 && m.expired > 0 && m.replaced > 0);
  dlrtab_destroy(t);
}

/* Mostly full: evictions every other insert. */
static void test_model_full(void)
{
  model_run(500, 40, true);
}

/* Mostly not full: holes, hundreds of repacks, gaps in the ring that are
 * exactly one record, or 8 bytes short of one. */
static void test_model_holes(void)
{
  model_run(1200, 200, false);
}

void suite_dlr(void);
void suite_dlr(void)
{
  static const struct test_case cases[] = {
    { "insert, lookup, remove", test_insert_lookup_remove },
    { "intermediate receipt keeps the entry", test_keep_on_intermediate },
    { "same id on two connectors", test_connectors_distinct },
    { "replace", test_replace },
    { "eviction of the oldest", test_evict_oldest },
    { "capacity over shards", test_capacity_over_shards },
    { "ttl expiry", test_expire },
    { "drop handler: evicted, replaced, expired", test_drop_handler },
    { "unmatched and bad ids", test_unmatched_and_bad_ids },
    { "strings at their maxima", test_maxima_preserved },
    { "id normalisation", test_normalize },
    { "four threads", test_concurrent },
    { "random run against a model, full", test_model_full },
    { "random run against a model, with holes", test_model_holes },
    { NULL, NULL },
  };
  test_add_suite("dlr", cases);
}
