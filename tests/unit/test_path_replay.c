/* test_path_replay.c - the journal read again at start (server/path/
 * path_replay.c), with a real journal in a directory of its own and an
 * edge of the test's own in place of the connectors: each record means
 * what path_replay.c says, and the summary counts it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "config_checks.h"
#include "core.h"
#include "path.h"
#include "queue.h"
#include "testutil.h"

#define CONF \
  "accounts = ( { name = \"shop\"; password = \"pw\"; } );\n" \
  "connectors = (\n" \
  "  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:0\"; },\n" \
  "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:1\"; system_id = \"x\"; }\n" \
  ");\n" \
  "routes = ( { dst_prefix = \"49\"; to = \"out\"; } );\n"

enum { IN, OUT, GONE = 7 };

/* Where the replay put things. */
struct edge {
  uint64_t restored_msgs[8];
  unsigned n_msgs;
  uint64_t restored_receipts[8];
  char receipt_user[32];
  unsigned n_receipts;
  unsigned held;
  unsigned unresolved;
  char unresolved_key[32];
  unsigned unresolved_connector;
};

static int restore(void *ctx, unsigned target, struct qitem *it, const char *user)
{
  struct edge *e = ctx;
  if (target != OUT && target != IN)
    return -1;   /* a connector no longer there */
  if (it->kind == QITEM_MSG && e->n_msgs < 8)
    e->restored_msgs[e->n_msgs++] = it->msg->id;
  if (it->kind == QITEM_RECEIPT && e->n_receipts < 8) {
    e->restored_receipts[e->n_receipts++] = it->journal_id;
    snprintf(e->receipt_user, sizeof e->receipt_user, "%s", user);
  }
  qitem_free(it);
  return 0;
}

static enum path_held hold(void *ctx, struct qitem **it, unsigned target, int64_t now)
{
  struct edge *e = ctx;
  (void)target;
  if ((*it)->msg->deferred <= now)
    return PATH_NOT_HELD;
  e->held++;
  qitem_free(*it);
  *it = NULL;
  return PATH_HELD_SCHEDULED;
}

static enum path_unresolved unresolved(void *ctx, unsigned connector, const char *key, const struct msg_receipt *r,
                                       uint64_t journal_id)
{
  struct edge *e = ctx;
  (void)r;
  (void)journal_id;
  e->unresolved++;
  e->unresolved_connector = connector;
  snprintf(e->unresolved_key, sizeof e->unresolved_key, "%s", key);
  return PATH_UNRESOLVED_ADOPTED;
}

static const struct path_replay_edge test_edge = { .restore = restore, .hold = hold, .unresolved = unresolved };

static char dir[64];

static void remove_dir(void)
{
  DIR *d = opendir(dir);
  struct dirent *de;
  char path[512];
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.') {
      snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
      unlink(path);
    }
  if (d)
    closedir(d);
  rmdir(dir);
}

static void ignore_record(void *ctx, const struct spool_record *rec)
{
  (void)ctx;
  (void)rec;
}

static void ignore_warning(void *ctx, const char *text)
{
  (void)ctx;
  (void)text;
}

static void message(struct msg *m, uint64_t id, int64_t deferred)
{
  memset(m, 0, sizeof *m);
  m->id = id;
  snprintf(m->src.addr, sizeof m->src.addr, "4930123");
  snprintf(m->dst.addr, sizeof m->dst.addr, "4930555");
  snprintf(m->origin.user, sizeof m->origin.user, "shop");
  m->origin.connector = IN;
  m->dlr_mask = MSG_DLR_DELIVERED;
  m->received_ms = (int64_t)time(NULL) * 1000;
  m->deferred = deferred;
}

/* A journal as a stopped emgd left it. */
static void write_journal(void)
{
  struct spool_options opt = { .sync = true };
  char err[256] = "";
  struct spool *s = spool_open(dir, &opt, ignore_record, ignore_warning, NULL, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  struct msg m;
  struct msg_receipt r = { .state = MSG_STATE_DELIVERED };
  message(&m, 11, 0);   /* sent: waits for its receipt */
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 11, .target = OUT, .msg = &m });
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_SENT, .id = 11, .target = OUT, .smsc_id = "abc" });
  message(&m, 12, 0);   /* queued */
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 12, .target = OUT, .msg = &m });
  message(&m, 13, 0);   /* finished */
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 13, .target = OUT, .msg = &m });
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_FINISHED, .id = 13 });
  message(&m, 17, 0);   /* for a connector no longer there */
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 17, .target = GONE, .msg = &m });
  message(&m, 18, (int64_t)time(NULL) + 3600);   /* held until its time */
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = 18, .target = OUT, .msg = &m });
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_RECEIPT, .id = 14, .target = IN, .receipt = &r,
                                          .user = "shop" });
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_RECEIPT, .id = 16, .target = IN, .receipt = &r,
                                          .user = "shop" });
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_RECEIPT_DONE, .id = 16 });
  spool_append(s, &(struct spool_record){ .type = SPOOL_REC_UNRESOLVED, .id = 15, .target = OUT, .smsc_id = "zz",
                                          .receipt = &r });
  spool_close(s);
}

static void test_replay(void)
{
  snprintf(dir, sizeof dir, "/tmp/emg-path-replay-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  write_journal();
  struct config *cfg = config_check_loaded(CONF, "path_replay.conf");
  struct core core;
  CU_ASSERT_EQUAL_FATAL(core_init(&core, cfg), 0);
  struct edge e = { 0 };
  struct spool_options opt = { .sync = true };
  struct path_replay_summary sum;
  char err[256] = "";
  struct path_replay *r = path_replay_open(&core, dir, &opt, core.log, &test_edge, &e, &sum, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  /* MSG, then nothing: queued again. MSG then FINISHED: nothing. */
  CU_ASSERT_EQUAL(sum.messages, 1);
  CU_ASSERT_EQUAL(e.n_msgs, 1);
  CU_ASSERT_EQUAL(e.restored_msgs[0], 12);
  /* MSG then SENT: its DLR entry back, not queued. */
  CU_ASSERT_EQUAL(sum.awaiting_receipt, 1);
  struct dlr_info info;
  CU_ASSERT_EQUAL(dlrtab_lookup(core.dlr, OUT, "abc", false, &info), 1);
  CU_ASSERT_EQUAL(info.msg_id, 11);
  /* Held until its time; for no connector: dropped, its place given back. */
  CU_ASSERT_EQUAL(sum.scheduled, 1);
  CU_ASSERT_EQUAL(e.held, 1);
  CU_ASSERT_EQUAL(sum.dropped, 1);
  CU_ASSERT_EQUAL(atomic_load(&core.in_flight), 2);   /* 12 queued, 18 held */
  /* RECEIPT: back to its account; RECEIPT then RECEIPT_DONE: nothing. */
  CU_ASSERT_EQUAL(sum.receipts, 1);
  CU_ASSERT_EQUAL(e.n_receipts, 1);
  CU_ASSERT_EQUAL(e.restored_receipts[0], 14);
  CU_ASSERT_STRING_EQUAL(e.receipt_user, "shop");
  /* UNRESOLVED: kept until the replay is finished, then to the edge. */
  CU_ASSERT_EQUAL(sum.unresolved, 1);
  CU_ASSERT_EQUAL(e.unresolved, 0);
  CU_ASSERT(sum.max_id >= 18);
  path_replay_finish(r);
  CU_ASSERT_EQUAL(e.unresolved, 1);
  CU_ASSERT_EQUAL(e.unresolved_connector, OUT);
  CU_ASSERT_STRING_EQUAL(e.unresolved_key, "zz");
  spool_close(core.spool);
  core.spool = NULL;
  core_destroy(&core);
  config_free(cfg);
  remove_dir();
}

void suite_path_replay(void);
void suite_path_replay(void)
{
  static const struct test_case cases[] = {
    { "each record as path_replay.c says, counted", test_replay },
    { NULL, NULL },
  };
  test_add_suite("path_replay", cases);
}
