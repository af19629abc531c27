/* test_path_sent.c - the response path alone (server/path/path_sent.c):
 * every way an answer to something sent ends, with an edge of the test's
 * own in place of the endpoint, and no socket or thread. Each answer ends
 * in exactly one of finished, awaits receipt, retry, rerouted or failed;
 * the counts, the journal and the origin hear what that outcome promises.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  "  { name = \"out\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:1\"; system_id = \"x\";\n" \
  "    retry = { attempts = 4; backoff_first = 100; backoff_factor = 3; backoff_max = 500;\n" \
  "              permanent = \"fail\"; temporary = \"retry\";\n" \
  "              errors = ( { code = 0x45; action = \"reroute\"; }, { code = 0x14; action = \"reroute\"; } ); }; }\n" \
  ");\n" \
  "routes = ( { dst_prefix = \"49\"; to = \"out\"; } );\n"

enum { IN, OUT };

/* The endpoint as the response path sees it. */
struct edge {
  unsigned journaled;
  enum spool_record_type last_type;
  uint64_t last_id;
  char last_key[64];
  unsigned again;
  uint64_t again_backoff;
  bool reroute_takes;
  unsigned rerouted;
  unsigned gave_up;
  uint8_t gave_up_state;
  uint32_t gave_up_code;
  unsigned told;
  uint8_t told_state;
  char told_id[sizeof ((struct msg_receipt *)0)->id + 1];
};

static void journal_event(void *ctx, enum spool_record_type type, uint64_t id, uint16_t target, const char *key)
{
  struct edge *e = ctx;
  (void)target;
  e->journaled++;
  e->last_type = type;
  e->last_id = id;
  snprintf(e->last_key, sizeof e->last_key, "%s", key ? key : "");
}

static void again(void *ctx, struct qitem *it, uint64_t backoff_ms)
{
  struct edge *e = ctx;
  e->again++;
  e->again_backoff = backoff_ms;
  qitem_free(it);
}

static bool reroute(void *ctx, struct qitem *it, const char *why)
{
  struct edge *e = ctx;
  CU_ASSERT_PTR_NOT_NULL(why);
  if (!e->reroute_takes)
    return false;
  e->rerouted++;
  qitem_free(it);
  return true;
}

static void give_up(void *ctx, struct qitem *it, uint8_t state, uint32_t code)
{
  struct edge *e = ctx;
  e->gave_up++;
  e->gave_up_state = state;
  e->gave_up_code = code;
  qitem_free(it);
}

static void tell_origin(void *ctx, const struct dlr_info *info, const struct msg_receipt *r)
{
  struct edge *e = ctx;
  CU_ASSERT_PTR_NOT_NULL(info);
  e->told++;
  e->told_state = r->state;
  snprintf(e->told_id, sizeof e->told_id, "%s", r->id);
}

static const struct path_sent_edge persist_edge = {
  .journal_event = journal_event, .again = again, .reroute = reroute, .give_up = give_up, .tell_origin = tell_origin,
};

struct fixture {
  struct config *cfg;
  struct core core;
  struct edge edge;
  uint64_t next_id;
};

static struct fixture *setup(void)
{
  struct fixture *f = calloc(1, sizeof *f);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  f->cfg = config_check_loaded(CONF, "path_sent.conf");
  CU_ASSERT_EQUAL_FATAL(core_init(&f->core, f->cfg), 0);
  f->next_id = 1000;
  return f;
}

static void teardown(struct fixture *f)
{
  core_destroy(&f->core);
  config_free(f->cfg);
  free(f);
}

/* A message in flight, as a queue holds it: the path's once answered. */
static struct qitem *message(struct fixture *f, uint8_t dlr_mask)
{
  struct msg m;
  memset(&m, 0, sizeof m);
  m.id = ++f->next_id;
  snprintf(m.src.addr, sizeof m.src.addr, "4930123");
  snprintf(m.dst.addr, sizeof m.dst.addr, "4930555");
  m.dlr_mask = dlr_mask;
  struct qitem *it = qitem_new(QITEM_MSG);
  CU_ASSERT_PTR_NOT_NULL_FATAL(it);
  CU_ASSERT_PTR_NOT_NULL_FATAL(it->msg = msg_clone(&m));
  atomic_fetch_add(&f->core.in_flight, 1);
  return it;
}

static struct qitem *receipt(uint64_t journal_id)
{
  struct qitem *it = qitem_new(QITEM_RECEIPT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(it);
  it->msg_id = 77;
  it->journal_id = journal_id;
  it->receipt.state = MSG_STATE_DELIVERED;
  return it;
}

static struct path_sent_verdict answer(struct fixture *f, struct qitem *it, bool delivery, enum proto_status status,
                                       uint32_t raw, const char *msgid, uint64_t backoff)
{
  struct path_sent_request rq = {
    .core = &f->core, .edge = &persist_edge, .edge_ctx = &f->edge, .log = f->core.log,
    .connector = delivery ? IN : OUT, .cfg = &f->cfg->connectors[delivery ? IN : OUT], .delivery = delivery,
    .peer_receipts = !delivery, .peer = "shop", .backoff_ms = backoff, .it = it, .status = status,
    .raw_status = raw, .msgid = msgid, .why = status == PROTO_OK ? "" : "refused",
  };
  struct path_sent_verdict v;
  path_sent(&rq, &v);
  return v;
}

static void test_submit_accepted(void)
{
  struct fixture *f = setup();
  /* No receipt asked: finished, the back-off starts over. */
  struct qitem *it = message(f, 0);
  uint64_t id = it->msg->id;
  struct path_sent_verdict v = answer(f, it, false, PROTO_OK, 0, "abc", 300);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FINISHED);
  CU_ASSERT_EQUAL(v.backoff_ms, 0);
  CU_ASSERT_EQUAL(f->edge.last_type, SPOOL_REC_FINISHED);
  CU_ASSERT_EQUAL(f->edge.last_id, id);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.sent), 1);
  CU_ASSERT_EQUAL(atomic_load(&f->core.in_flight), 0);
  CU_ASSERT_EQUAL(f->edge.told, 0);
  /* A receipt asked of the SMSC: its DLR entry under the SMSC's id, and
   * the journal keeps it as sent, waiting; "accepted" told at once. */
  it = message(f, MSG_DLR_FROM_SMSC | MSG_DLR_SMSC_ACCEPTED);
  id = it->msg->id;
  v = answer(f, it, false, PROTO_OK, 0, "ABC1", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_AWAITS_RECEIPT);
  CU_ASSERT_EQUAL(f->edge.last_type, SPOOL_REC_SENT);
  CU_ASSERT_EQUAL(f->edge.last_id, id);
  CU_ASSERT_STRING_EQUAL(f->edge.last_key, "abc1");
  CU_ASSERT_EQUAL(f->edge.told, 1);
  CU_ASSERT_EQUAL(f->edge.told_state, MSG_STATE_SMSC_ACCEPTED);
  CU_ASSERT_STRING_EQUAL(f->edge.told_id, "ABC1");
  struct dlr_info info;
  CU_ASSERT_EQUAL(dlrtab_lookup(f->core.dlr, OUT, "abc1", true, &info), 1);
  CU_ASSERT_EQUAL(info.msg_id, id);
  /* An id no receipt could match (empty): finished, not waiting forever. */
  it = message(f, MSG_DLR_FROM_SMSC);
  v = answer(f, it, false, PROTO_OK, 0, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FINISHED);
  CU_ASSERT_EQUAL(f->edge.last_type, SPOOL_REC_FINISHED);
  CU_ASSERT_EQUAL(f->edge.again + f->edge.gave_up + f->edge.rerouted, 0);
  teardown(f);
}

static void test_submit_refused(void)
{
  struct fixture *f = setup();
  /* Permanent: fails, its code to the origin; no back-off change. */
  struct path_sent_verdict v = answer(f, message(f, 0), false, PROTO_E_ADDRESS, 0x0B, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FAILED);
  CU_ASSERT_EQUAL(f->edge.gave_up, 1);
  CU_ASSERT_EQUAL(f->edge.gave_up_state, MSG_STATE_REJECTED);
  CU_ASSERT_EQUAL(f->edge.gave_up_code, 0x0B);
  CU_ASSERT_EQUAL(v.backoff_ms, 0);
  /* Temporary: again, after a back-off that grows by the factor up to
   * its maximum. */
  v = answer(f, message(f, 0), false, PROTO_E_THROTTLED, 0x58, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_RETRY);
  CU_ASSERT_EQUAL(v.backoff_ms, 100);
  CU_ASSERT_EQUAL(f->edge.again_backoff, 100);
  v = answer(f, message(f, 0), false, PROTO_E_THROTTLED, 0x58, "", v.backoff_ms);
  CU_ASSERT_EQUAL(v.backoff_ms, 300);
  v = answer(f, message(f, 0), false, PROTO_E_THROTTLED, 0x58, "", v.backoff_ms);
  CU_ASSERT_EQUAL(v.backoff_ms, 500);
  CU_ASSERT_EQUAL(f->edge.again, 3);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.retried), 3);
  teardown(f);
}

static void test_submit_attempts(void)
{
  struct fixture *f = setup();
  /* The fourth refusal of one message fails it, whatever the action. */
  struct qitem *it = message(f, 0);
  it->attempts = 3;
  struct path_sent_verdict v = answer(f, it, false, PROTO_E_THROTTLED, 0x58, "", 100);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FAILED);
  CU_ASSERT_EQUAL(f->edge.gave_up, 1);
  CU_ASSERT_EQUAL(f->edge.again, 0);
  teardown(f);
}

static void test_submit_reroute(void)
{
  struct fixture *f = setup();
  /* The code's own action first: rerouted. */
  f->edge.reroute_takes = true;
  struct path_sent_verdict v = answer(f, message(f, 0), false, PROTO_E_ADDRESS, 0x45, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_REROUTED);
  CU_ASSERT_EQUAL(f->edge.rerouted, 1);
  /* Nowhere to go: a permanent refusal fails, a temporary one retries. */
  f->edge.reroute_takes = false;
  v = answer(f, message(f, 0), false, PROTO_E_ADDRESS, 0x45, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FAILED);
  v = answer(f, message(f, 0), false, PROTO_E_TEMPORARY, 0x14, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_RETRY);
  CU_ASSERT_EQUAL(f->edge.rerouted, 1);
  CU_ASSERT_EQUAL(f->edge.gave_up, 1);
  CU_ASSERT_EQUAL(f->edge.again, 1);
  teardown(f);
}

static void test_delivery(void)
{
  struct fixture *f = setup();
  /* Taken: finished, and the origin that asked hears "delivered". */
  struct qitem *it = message(f, MSG_DLR_DELIVERED);
  uint64_t id = it->msg->id;
  struct path_sent_verdict v = answer(f, it, true, PROTO_OK, 0, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FINISHED);
  CU_ASSERT_EQUAL(f->edge.last_type, SPOOL_REC_FINISHED);
  CU_ASSERT_EQUAL(f->edge.last_id, id);
  CU_ASSERT_EQUAL(f->edge.told, 1);
  CU_ASSERT_EQUAL(f->edge.told_state, MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(atomic_load(&f->core.in_flight), 0);
  /* Not now: again at once, no back-off. */
  v = answer(f, message(f, 0), true, PROTO_E_QUEUE_FULL, 0x14, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_RETRY);
  CU_ASSERT_EQUAL(f->edge.again_backoff, 0);
  /* Refused: failed with the client's code. */
  v = answer(f, message(f, 0), true, PROTO_E_ADDRESS, 0x0B, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FAILED);
  CU_ASSERT_EQUAL(f->edge.gave_up_code, 0x0B);
  CU_ASSERT_EQUAL(f->edge.told, 1);
  teardown(f);
}

static void test_receipt(void)
{
  struct fixture *f = setup();
  struct path_sent_verdict v = answer(f, receipt(55), true, PROTO_OK, 0, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_FINISHED);
  CU_ASSERT_EQUAL(f->edge.last_type, SPOOL_REC_RECEIPT_DONE);
  CU_ASSERT_EQUAL(f->edge.last_id, 55);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.receipts_out), 1);
  v = answer(f, receipt(56), true, PROTO_E_TEMPORARY, 0x08, "", 0);
  CU_ASSERT_EQUAL(v.outcome, PATH_SENT_RETRY);
  CU_ASSERT_EQUAL(f->edge.journaled, 1);
  CU_ASSERT_EQUAL(f->edge.again, 1);
  teardown(f);
}

static void test_outcome_names(void)
{
  static const char *const names[] = { "finished", "awaits receipt", "retry", "rerouted", "failed" };
  for (unsigned o = PATH_SENT_FINISHED; o <= PATH_SENT_FAILED; o++)
    CU_ASSERT_STRING_EQUAL(path_sent_outcome_name(o), names[o]);
  CU_ASSERT_STRING_EQUAL(path_sent_outcome_name(PATH_SENT_FAILED + 1), "?");
}

void suite_path_sent(void);
void suite_path_sent(void)
{
  static const struct test_case cases[] = {
    { "submit accepted: finished, or its receipt awaited under the SMSC's id", test_submit_accepted },
    { "submit refused: failed, or again after a growing back-off", test_submit_refused },
    { "submit refused once too often: failed", test_submit_attempts },
    { "submit refused: rerouted, or as its class says when nowhere to go", test_submit_reroute },
    { "delivery: taken, not now, refused", test_delivery },
    { "receipt: taken, not now", test_receipt },
    { "outcome names", test_outcome_names },
    { NULL, NULL },
  };
  test_add_suite("path_sent", cases);
}
