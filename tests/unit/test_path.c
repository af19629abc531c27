/* test_path.c - the message path alone (server/path/): every exit of every
 * stage, with an edge of the test's own in place of the endpoints, and no
 * socket or thread. After each refusal, nothing of what the stages before
 * did is left: no place in in_flight, no credit, no part handed over, the
 * parts journaled marked finished; and it is answered once and counted
 * under its reason.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "account.h"
#include "charset.h"
#include "config.h"
#include "config_checks.h"
#include "core.h"
#include "path.h"
#include "queue.h"
#include "routing.h"
#include "testutil.h"

#define CONF \
  "accounts = (\n" \
  "  { name = \"shop\"; password = \"pw\"; connectors = [ \"in\" ]; },\n" \
  "  { name = \"slow\"; password = \"pw\"; connectors = [ \"in\" ]; max_rate = 1.0; },\n" \
  "  { name = \"poor\"; password = \"pw\"; connectors = [ \"in\" ]; credit = 2; },\n" \
  "  { name = \"picky\"; password = \"pw\"; connectors = [ \"in\" ]; senders = [ \"SHOP\" ]; }\n" \
  ");\n" \
  "connectors = (\n" \
  "  { name = \"in\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:0\"; },\n" \
  "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:1\"; system_id = \"x\"; },\n" \
  "  { name = \"small\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:2\"; system_id = \"x\";\n" \
  "    max_queue = 1; }\n" \
  ");\n" \
  "routes = ( { dst_prefix = \"4917\"; to = \"small\"; }, { dst_prefix = \"49\"; to = \"out\"; } );\n"

enum { IN, OUT, SMALL, N_CONNECTORS };

/* The endpoints as the path sees them, with switches for their failures. */
struct edge {
  struct core *core;
  struct queue queues[N_CONNECTORS];
  bool no_queue;                   /* queue_of finds none */
  bool naming_fails;
  unsigned journal_fail_at;        /* the Nth message record is refused (1-based); 0: none */
  unsigned journal_msgs;
  uint64_t finished[8];
  unsigned n_finished;
  unsigned parts_made, handed;
  /* the last answer */
  unsigned answers;
  enum proto_status status;
  char ref[64];
  unsigned hold_ms;
  uint64_t ticket;
};

static int name_message(void *ctx, struct msg *m)
{
  struct edge *e = ctx;
  if (e->naming_fails)
    return -1;
  snprintf(m->origin.ref, sizeof m->origin.ref, "ref-%llu", (unsigned long long)m->id);
  return 0;
}

static int smsc_named(void *ctx, const char *name)
{
  struct edge *e = ctx;
  for (unsigned i = 0; i < e->core->cfg->n_connectors; i++)
    if (e->core->cfg->connectors[i].mode == CONFIG_CONN_CLIENT && strcmp(e->core->cfg->connectors[i].name, name) == 0)
      return (int)i;
  return -1;
}

static bool usable(void *ctx, int index)
{
  (void)ctx;
  (void)index;
  return true;
}

static struct queue *queue_of(void *ctx, unsigned target, const char *user)
{
  struct edge *e = ctx;
  (void)user;
  return e->no_queue || target >= N_CONNECTORS ? NULL : &e->queues[target];
}

static void parts_made(void *ctx, const struct qlist *parts, unsigned target)
{
  struct edge *e = ctx;
  (void)target;
  e->parts_made += (unsigned)parts->count;
}

static uint64_t journal(void *ctx, const struct spool_record *rec)
{
  struct edge *e = ctx;
  if (rec->type == SPOOL_REC_FINISHED) {
    if (e->n_finished < sizeof e->finished / sizeof e->finished[0])
      e->finished[e->n_finished++] = rec->id;
    return 1000 + e->n_finished;
  }
  CU_ASSERT_EQUAL(rec->type, SPOOL_REC_MSG);
  if (++e->journal_msgs == e->journal_fail_at)
    return 0;
  return 100 + e->journal_msgs;
}

static void hand_over(void *ctx, unsigned target, struct queue *q, struct qitem *it, int64_t now)
{
  struct edge *e = ctx;
  (void)now;
  CU_ASSERT_PTR_EQUAL(q, &e->queues[target]);
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 0);
  e->handed++;
}

static void answer(void *ctx, const void *reply, enum proto_status status, const char *ref, unsigned hold_ms,
                   uint64_t ticket, uint64_t received_ns)
{
  struct edge *e = ctx;
  CU_ASSERT_PTR_EQUAL(reply, e);   /* what the request carried, untouched */
  CU_ASSERT(received_ns > 0);
  e->answers++;
  e->status = status;
  snprintf(e->ref, sizeof e->ref, "%s", ref ? ref : "");
  e->hold_ms = hold_ms;
  e->ticket = ticket;
}

static const struct path_edge persist_edge = {
  .name = name_message, .smsc_named = smsc_named, .usable = usable, .queue_of = queue_of,
  .parts_made = parts_made, .journal = journal, .hand_over = hand_over, .answer = answer,
};
static const struct path_edge memory_edge = {
  .smsc_named = smsc_named, .usable = usable, .queue_of = queue_of, .hand_over = hand_over, .answer = answer,
};

struct fixture {
  struct config *cfg;
  struct core core;
  struct edge edge;
  struct id_block ids;
  uint8_t concat_ref;
  bool stopping;                   /* the endpoint's */
  uint8_t data[64 * 1024];
  struct msg msg;
};

static struct fixture *setup(const char *extra)
{
  struct fixture *f = calloc(1, sizeof *f);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  char text[4096];
  snprintf(text, sizeof text, "%s%s", CONF, extra ? extra : "");
  f->cfg = config_check_loaded(text, "path.conf");
  CU_ASSERT_EQUAL_FATAL(core_init(&f->core, f->cfg), 0);
  f->edge.core = &f->core;
  for (unsigned i = 0; i < N_CONNECTORS; i++)
    queue_init(&f->edge.queues[i]);
  return f;
}

static void teardown(struct fixture *f)
{
  for (unsigned i = 0; i < N_CONNECTORS; i++) {
    struct qlist l = { 0 };
    while (queue_take(&f->edge.queues[i], 64, &l) > 0)
      while (l.head) {
        struct qitem *next = l.head->next;
        qitem_free(l.head);
        l.head = next;
      }
    queue_destroy(&f->edge.queues[i]);
  }
  core_destroy(&f->core);
  config_free(f->cfg);
  free(f);
}

/* A GSM text of len characters to dst, from src. */
static void message(struct fixture *f, const char *src, const char *dst, size_t len)
{
  memset(&f->msg, 0, sizeof f->msg);
  snprintf(f->msg.src.addr, sizeof f->msg.src.addr, "%s", src);
  snprintf(f->msg.dst.addr, sizeof f->msg.dst.addr, "%s", dst);
  f->msg.coding = SMS_TEXT_GSM7;
  CU_ASSERT_FATAL(len <= sizeof f->data);
  memset(f->data, 'a', len);
  f->msg.data = f->data;
  f->msg.data_len = (uint32_t)len;
}

/* Sends f->msg as user through edge; the verdict. */
static struct path_verdict run_as(struct fixture *f, const struct path_edge *edge, const char *user,
                                  const char *route_to)
{
  struct path_request rq = { .core = &f->core, .edge = edge, .edge_ctx = &f->edge, .log = f->core.log,
                             .connector = IN, .ids = &f->ids, .concat_ref = &f->concat_ref, .msg = &f->msg,
                             .user = user, .account = accounts_find(f->core.accounts, user),
                             .route_to = route_to, .stopping = f->stopping, .reply = &f->edge };
  struct path_verdict v;
  path_accept(&rq, &v);
  return v;
}

static uint64_t refused(struct fixture *f, enum core_refusal why)
{
  uint64_t by[CORE_REFUSALS];
  core_refusals(&f->core, IN, by);
  return by[why];
}

/* A refusal at stage with status and reason, and nothing left of it. */
static void assert_refused(struct fixture *f, const struct path_verdict *v, enum path_stage stage,
                           enum proto_status status, enum core_refusal why, uint64_t in_flight_before,
                           unsigned handed_before)
{
  CU_ASSERT_EQUAL(v->stage, stage);
  CU_ASSERT_EQUAL(v->status, status);
  CU_ASSERT_EQUAL(v->why, why);
  CU_ASSERT_EQUAL(f->edge.status, status);
  CU_ASSERT_STRING_EQUAL(f->edge.ref, "");
  CU_ASSERT_EQUAL(f->edge.ticket, 0);
  CU_ASSERT_EQUAL(atomic_load(&f->core.in_flight), in_flight_before);
  CU_ASSERT_EQUAL(f->edge.handed, handed_before);
  CU_ASSERT(refused(f, why) >= 1);
}

static void test_accepted(void)
{
  struct fixture *f = setup(NULL);
  message(f, "4930123", "4930555", 20);
  struct path_verdict v = run_as(f, &persist_edge, "shop", NULL);
  CU_ASSERT_EQUAL(v.status, PROTO_OK);
  CU_ASSERT_EQUAL(v.stage, PATH_ACK);
  CU_ASSERT_EQUAL(v.target, OUT);
  CU_ASSERT_EQUAL(f->edge.answers, 1);
  CU_ASSERT_EQUAL(f->edge.status, PROTO_OK);
  char ref[64];
  snprintf(ref, sizeof ref, "ref-%llu", (unsigned long long)v.id);
  CU_ASSERT_STRING_EQUAL(f->edge.ref, ref);
  CU_ASSERT_EQUAL(f->edge.ticket, 101);   /* the ack waits for its record */
  CU_ASSERT_EQUAL(f->edge.hold_ms, 0);
  CU_ASSERT_EQUAL(f->edge.handed, 1);
  CU_ASSERT_EQUAL(queue_count(&f->edge.queues[OUT]), 1);
  CU_ASSERT_EQUAL(atomic_load(&f->core.in_flight), 1);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.received), 1);
  /* Persist off: no record, no ticket; the id in decimal without a name. */
  struct path_verdict w = run_as(f, &memory_edge, "shop", NULL);
  CU_ASSERT_EQUAL(w.status, PROTO_OK);
  CU_ASSERT_EQUAL(f->edge.ticket, 0);
  snprintf(ref, sizeof ref, "%llu", (unsigned long long)w.id);
  CU_ASSERT_STRING_EQUAL(f->edge.ref, ref);
  CU_ASSERT_EQUAL(f->edge.journal_msgs, 1);
  CU_ASSERT_EQUAL(atomic_load(&f->core.in_flight), 2);
  teardown(f);
}

static void test_long_message(void)
{
  struct fixture *f = setup(NULL);
  message(f, "4930123", "4930555", 400);   /* three parts of 153 */
  struct path_verdict v = run_as(f, &persist_edge, "shop", NULL);
  CU_ASSERT_EQUAL(v.status, PROTO_OK);
  CU_ASSERT_EQUAL(f->edge.parts_made, 3);
  CU_ASSERT_EQUAL(f->edge.journal_msgs, 3);
  CU_ASSERT_EQUAL(f->edge.ticket, 103);   /* the last part's record */
  CU_ASSERT_EQUAL(f->edge.handed, 3);
  CU_ASSERT_EQUAL(atomic_load(&f->core.in_flight), 3);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.received), 1);
  CU_ASSERT_EQUAL(f->concat_ref, 1);
  teardown(f);
}

static void test_admit(void)
{
  struct fixture *f = setup(NULL);
  message(f, "4930123", "4930555", 20);
  /* The account's rate: a second's worth at once, then throttled. */
  struct path_verdict v;
  unsigned accepted = 0;
  while ((v = run_as(f, &persist_edge, "slow", NULL)).status == PROTO_OK && accepted < 10)
    accepted++;
  CU_ASSERT(accepted >= 1 && accepted < 10);
  assert_refused(f, &v, PATH_ADMIT, PROTO_E_THROTTLED, CORE_REFUSED_RATE, accepted, accepted);
  /* A sender the account may not use. */
  v = run_as(f, &persist_edge, "picky", NULL);
  assert_refused(f, &v, PATH_ADMIT, PROTO_E_SOURCE, CORE_REFUSED_ACCOUNT_LIMIT, accepted, accepted);
  CU_ASSERT_EQUAL(f->edge.answers, accepted + 2);
  teardown(f);

  /* The gateway full (max_total_queue). */
  f = setup("general = { max_total_queue = 1; max_total_queue_soft = 1; };\n");
  message(f, "4930123", "4930555", 20);
  CU_ASSERT_EQUAL(run_as(f, &persist_edge, "shop", NULL).status, PROTO_OK);
  v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_ADMIT, PROTO_E_QUEUE_FULL, CORE_REFUSED_QUEUE_FULL, 1, 1);
  teardown(f);

  /* The endpoint stopping: refused as full, with room in the gateway. */
  f = setup(NULL);
  message(f, "4930123", "4930555", 20);
  f->stopping = true;
  v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_ADMIT, PROTO_E_QUEUE_FULL, CORE_REFUSED_QUEUE_FULL, 0, 0);
  f->stopping = false;
  CU_ASSERT_EQUAL(run_as(f, &persist_edge, "shop", NULL).status, PROTO_OK);
  teardown(f);
}

static void test_admit_slow(void)
{
  struct fixture *f = setup("general = { max_total_queue = 10; max_total_queue_soft = 1; };\n");
  message(f, "4930123", "4930555", 20);
  CU_ASSERT_EQUAL(run_as(f, &persist_edge, "shop", NULL).status, PROTO_OK);
  CU_ASSERT_EQUAL(f->edge.hold_ms, 0);
  /* Past the soft limit: accepted, its ack held a little. */
  CU_ASSERT_EQUAL(run_as(f, &persist_edge, "shop", NULL).status, PROTO_OK);
  CU_ASSERT(f->edge.hold_ms > 0);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.slowed), 1);
  teardown(f);
}

static void test_filter(void)
{
  char list[] = "/tmp/emg-path-XXXXXX";
  int fd = mkstemp(list);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_FATAL(write(fd, "4930666\n", 8) == 8);
  close(fd);
  char plugins[512];
  snprintf(plugins, sizeof plugins, "plugins = ( { path = \"%s/blacklist.so\"; file = \"%s\"; timeout_ms = 5000; } );\n",
           EMG_PLUGIN_DIR, list);
  struct fixture *f = setup(plugins);
  char err[256];
  struct plugin_host *h = plugin_host_load(f->cfg, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  core_swap_plugins(&f->core, h);
  message(f, "4930123", "4930666", 20);
  struct path_verdict v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_FILTER, PROTO_E_PERMANENT, CORE_REFUSED_PLUGIN, 0, 0);
  message(f, "4930123", "4930555", 20);
  CU_ASSERT_EQUAL(run_as(f, &persist_edge, "shop", NULL).status, PROTO_OK);
  teardown(f);
  unlink(list);
}

static void test_route(void)
{
  struct fixture *f = setup(NULL);
  /* The origin's SMSC, unknown. */
  message(f, "4930123", "4930555", 20);
  struct path_verdict v = run_as(f, &persist_edge, "shop", "nowhere");
  assert_refused(f, &v, PATH_ROUTE, PROTO_E_ADDRESS, CORE_REFUSED_NO_ROUTE, 0, 0);
  /* ... and a known one, past the routes. */
  v = run_as(f, &persist_edge, "shop", "small");
  CU_ASSERT_EQUAL(v.status, PROTO_OK);
  CU_ASSERT_EQUAL(v.target, SMALL);
  /* No route for the destination. */
  message(f, "4930123", "3312345", 20);
  v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_ROUTE, PROTO_E_ADDRESS, CORE_REFUSED_NO_ROUTE, 1, 1);
  /* A route whose connector has no queue for it. */
  message(f, "4930123", "4930555", 20);
  f->edge.no_queue = true;
  v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_ROUTE, PROTO_E_ADDRESS, CORE_REFUSED_NO_ROUTE, 1, 1);
  f->edge.no_queue = false;
  /* The connector's queue full (max_queue 1, holding one). */
  message(f, "4930123", "4917555", 20);
  v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_ROUTE, PROTO_E_QUEUE_FULL, CORE_REFUSED_CONNECTOR_QUEUE_FULL, 1, 1);
  teardown(f);
}

static void test_split(void)
{
  struct fixture *f = setup(NULL);
  /* No id for the origin to know it by. */
  message(f, "4930123", "4930555", 20);
  f->edge.naming_fails = true;
  struct path_verdict v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_SPLIT, PROTO_E_TEMPORARY, CORE_REFUSED_OTHER, 0, 0);
  f->edge.naming_fails = false;
  /* Longer than 255 parts. */
  message(f, "4930123", "4930555", 256 * 153);
  v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_SPLIT, PROTO_E_TOO_LONG, CORE_REFUSED_TOO_LONG, 0, 0);
  CU_ASSERT_EQUAL(f->edge.journal_msgs, 0);
  teardown(f);
}

static int64_t credit_left(struct fixture *f, const char *user)
{
  struct account_view view;
  CU_ASSERT_FATAL(accounts_view(f->core.accounts, (unsigned)accounts_find(f->core.accounts, user), &view));
  return view.credit_left;
}

static void test_charge(void)
{
  struct fixture *f = setup(NULL);
  /* Three parts against a credit of two: none taken. */
  message(f, "4930123", "4930555", 400);
  struct path_verdict v = run_as(f, &persist_edge, "poor", NULL);
  assert_refused(f, &v, PATH_CHARGE, PROTO_E_CREDIT, CORE_REFUSED_CREDIT, 0, 0);
  CU_ASSERT_EQUAL(credit_left(f, "poor"), 2);
  CU_ASSERT_EQUAL(f->edge.journal_msgs, 0);
  /* Two parts fit. */
  message(f, "4930123", "4930555", 200);
  CU_ASSERT_EQUAL(run_as(f, &persist_edge, "poor", NULL).status, PROTO_OK);
  CU_ASSERT_EQUAL(credit_left(f, "poor"), 0);
  teardown(f);
}

static void test_journal(void)
{
  struct fixture *f = setup(NULL);
  /* The second of three parts refused by the journal: the first is marked
   * finished, the credit goes back, nothing is handed over or held. */
  message(f, "4930123", "4930555", 400);
  f->edge.journal_fail_at = 2;
  struct path_verdict v = run_as(f, &persist_edge, "poor", NULL);   /* credit 2: refused at charge */
  CU_ASSERT_EQUAL(v.stage, PATH_CHARGE);
  message(f, "4930123", "4930555", 200);
  v = run_as(f, &persist_edge, "poor", NULL);
  assert_refused(f, &v, PATH_JOURNAL, PROTO_E_TEMPORARY, CORE_REFUSED_JOURNAL, 0, 0);
  CU_ASSERT_EQUAL(f->edge.journal_msgs, 2);
  CU_ASSERT_EQUAL(f->edge.n_finished, 1);
  CU_ASSERT_EQUAL(credit_left(f, "poor"), 2);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.received), 0);
  /* The first record refused: nothing to mark. */
  f->edge.journal_msgs = 0;
  f->edge.journal_fail_at = 1;
  message(f, "4930123", "4930555", 20);
  v = run_as(f, &persist_edge, "shop", NULL);
  assert_refused(f, &v, PATH_JOURNAL, PROTO_E_TEMPORARY, CORE_REFUSED_JOURNAL, 0, 0);
  CU_ASSERT_EQUAL(f->edge.n_finished, 1);
  /* The journal back: accepted. */
  f->edge.journal_fail_at = 0;
  CU_ASSERT_EQUAL(run_as(f, &persist_edge, "shop", NULL).status, PROTO_OK);
  CU_ASSERT_EQUAL(f->edge.handed, 1);
  teardown(f);
}

/* A message moved to another connector is journaled as a copy of its
 * acceptance: a replay must not charge its credit again. */
static void test_moved_record(void)
{
  struct msg m = { .id = 4242, .credit_epoch = 3 };
  struct spool_record rec = path_moved_record(&m, SMALL);
  CU_ASSERT_EQUAL(rec.type, SPOOL_REC_MSG);
  CU_ASSERT_EQUAL(rec.id, 4242);
  CU_ASSERT_EQUAL(rec.target, SMALL);
  CU_ASSERT_PTR_EQUAL(rec.msg, &m);
  CU_ASSERT_TRUE(rec.moved);
}

static void test_stage_names(void)
{
  static const char *const names[] = { "admit", "filter", "route", "split", "charge", "journal", "stage", "ack" };
  for (unsigned s = PATH_ADMIT; s <= PATH_ACK; s++)
    CU_ASSERT_STRING_EQUAL(path_stage_name(s), names[s]);
  CU_ASSERT_STRING_EQUAL(path_stage_name(PATH_ACK + 1), "?");
}

void suite_path(void);
void suite_path(void)
{
  static const struct test_case cases[] = {
    { "accepted: one answer, its ticket, handed over, in flight", test_accepted },
    { "a long message: parts journaled, handed over, one ack", test_long_message },
    { "admit: rate, sender, the gateway full, the endpoint stopping", test_admit },
    { "admit: past the soft limit, the ack held", test_admit_slow },
    { "filter: a plugin's refusal", test_filter },
    { "route: no SMSC of that name, no route, no queue, queue full", test_route },
    { "split: no name for it, too long", test_split },
    { "charge: credit short, none taken", test_charge },
    { "journal: refused mid-way, undone", test_journal },
    { "a moved message's record: a copy of its acceptance", test_moved_record },
    { "stage names", test_stage_names },
    { NULL, NULL },
  };
  test_add_suite("path", cases);
}
