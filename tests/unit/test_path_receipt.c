/* test_path_receipt.c - the receipt path alone (server/path/
 * path_receipt.c): a receipt from an SMSC matched or not, passed on to its
 * origin or not, with an edge of the test's own and no socket or thread.
 * Each ends matched, unmatched or refused, and the DLR table, the journal
 * and the origin's queue show exactly what that promises.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
  "    long_receipts = \"combined\"; }\n" \
  ");\n" \
  "routes = ( { dst_prefix = \"49\"; to = \"out\"; } );\n"

enum { IN, OUT };

struct edge {
  struct queue origin;             /* account shop's queue on "in" */
  bool no_account;
  unsigned journal_fail_type;      /* refuse records of this type (0: none) */
  unsigned records;
  uint64_t finished[8];
  unsigned n_finished;
  unsigned receipts_journaled;
  uint64_t next_ticket;
  unsigned handed;
};

static struct queue *account_queue(void *ctx, unsigned connector, const char *user)
{
  struct edge *e = ctx;
  CU_ASSERT_EQUAL(connector, IN);
  CU_ASSERT_STRING_EQUAL(user, "shop");
  return e->no_account ? NULL : &e->origin;
}

static uint64_t journal(void *ctx, const struct spool_record *rec)
{
  struct edge *e = ctx;
  e->records++;
  if (e->journal_fail_type && rec->type == e->journal_fail_type)
    return 0;
  if (rec->type == SPOOL_REC_FINISHED && e->n_finished < sizeof e->finished / sizeof e->finished[0])
    e->finished[e->n_finished++] = rec->id;
  if (rec->type == SPOOL_REC_RECEIPT)
    e->receipts_journaled++;
  return ++e->next_ticket;
}

static void hand_over(void *ctx, struct queue *q, struct qitem *it)
{
  struct edge *e = ctx;
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 0);
  e->handed++;
}

static const struct path_receipt_edge persist_edge = {
  .account_queue = account_queue, .journal = journal, .hand_over = hand_over,
};
static const struct path_receipt_edge memory_edge = { .account_queue = account_queue, .hand_over = hand_over };

struct fixture {
  struct config *cfg;
  struct core core;
  struct edge edge;
  struct id_block ids;
};

static struct fixture *setup(void)
{
  struct fixture *f = calloc(1, sizeof *f);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  f->cfg = config_check_loaded(CONF, "path_receipt.conf");
  CU_ASSERT_EQUAL_FATAL(core_init(&f->core, f->cfg), 0);
  queue_init(&f->edge.origin);
  f->edge.next_ticket = 10;
  return f;
}

static void teardown(struct fixture *f)
{
  struct qlist l = { 0 };
  while (queue_take(&f->edge.origin, 64, &l) > 0)
    while (l.head) {
      struct qitem *next = l.head->next;
      qitem_free(l.head);
      l.head = next;
    }
  queue_destroy(&f->edge.origin);
  core_destroy(&f->core);
  config_free(f->cfg);
  free(f);
}

/* Message id, sent on "out" as SMSC id key, from account shop on "in". */
static void sent(struct fixture *f, uint64_t id, const char *key, uint8_t dlr_mask, uint8_t seq, uint8_t total)
{
  struct dlr_info info;
  memset(&info, 0, sizeof info);
  info.msg_id = id;
  info.origin_connector = IN;
  info.dlr_mask = dlr_mask;
  info.part_seq = seq;
  info.part_total = total;
  snprintf(info.origin_user, sizeof info.origin_user, "shop");
  /* A part names the reference its whole was answered with. */
  snprintf(info.origin_ref, sizeof info.origin_ref, "ref-%llu", (unsigned long long)(total ? 601 : id));
  snprintf(info.dst.addr, sizeof info.dst.addr, "4930555");
  CU_ASSERT_EQUAL_FATAL(dlrtab_insert(f->core.dlr, OUT, key, &info, time(NULL)), 0);
}

static struct path_receipt_verdict receipt_in(struct fixture *f, const struct path_receipt_edge *edge,
                                              const char *key, uint8_t state)
{
  struct msg_receipt r = { .state = state, .done_time = time(NULL) };
  snprintf(r.id, sizeof r.id, "%s", key);
  struct path_receipt_request rq = { .core = &f->core, .edge = edge, .edge_ctx = &f->edge, .log = f->core.log,
                                     .ids = &f->ids, .connector = OUT, .key = key, .receipt = &r };
  struct path_receipt_verdict v;
  path_receipt(&rq, &v);
  return v;
}

static bool entry_there(struct fixture *f, const char *key)
{
  struct dlr_info info;
  return dlrtab_lookup(f->core.dlr, OUT, key, false, &info) == 1;
}

static void test_matched_final(void)
{
  struct fixture *f = setup();
  sent(f, 501, "aa1", MSG_DLR_DELIVERED | MSG_DLR_FAILED, 0, 0);
  struct path_receipt_verdict v = receipt_in(f, &persist_edge, "aa1", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_MATCHED);
  CU_ASSERT_EQUAL(v.msg_id, 501);
  /* The receipt's record (11), then the message finished (12): the SMSC
   * waits for the later. */
  CU_ASSERT_EQUAL(f->edge.receipts_journaled, 1);
  CU_ASSERT_EQUAL(f->edge.n_finished, 1);
  CU_ASSERT_EQUAL(f->edge.finished[0], 501);
  CU_ASSERT_EQUAL(v.ticket, 12);
  CU_ASSERT_FALSE(entry_there(f, "aa1"));
  /* In the origin's queue as the origin knows the message. */
  struct qlist l = { 0 };
  CU_ASSERT_EQUAL_FATAL(queue_take(&f->edge.origin, 8, &l), 1);
  CU_ASSERT_EQUAL(l.head->kind, QITEM_RECEIPT);
  CU_ASSERT_STRING_EQUAL(l.head->receipt.id, "ref-501");
  CU_ASSERT_EQUAL(l.head->msg_id, 501);
  CU_ASSERT_EQUAL(l.head->via, OUT + 1);
  CU_ASSERT(l.head->journal_id != 0);
  qitem_free(l.head);
  CU_ASSERT_EQUAL(atomic_load(&f->core.stats.delivered), 1);
  teardown(f);
}

static void test_matched_not_final(void)
{
  struct fixture *f = setup();
  sent(f, 502, "aa2", MSG_DLR_BUFFERED | MSG_DLR_DELIVERED, 0, 0);
  struct path_receipt_verdict v = receipt_in(f, &persist_edge, "aa2", MSG_STATE_ENROUTE);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_MATCHED);
  CU_ASSERT_EQUAL(f->edge.n_finished, 0);   /* its final receipt is still to come */
  CU_ASSERT(entry_there(f, "aa2"));
  CU_ASSERT_EQUAL(f->edge.handed, 1);
  teardown(f);
}

static void test_not_wanted(void)
{
  struct fixture *f = setup();
  /* The origin asked only for failures: a delivery finishes the message,
   * and it hears nothing. */
  sent(f, 503, "aa3", MSG_DLR_FAILED, 0, 0);
  struct path_receipt_verdict v = receipt_in(f, &persist_edge, "aa3", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_MATCHED);
  CU_ASSERT_EQUAL(f->edge.handed, 0);
  CU_ASSERT_EQUAL(f->edge.n_finished, 1);
  /* An account no longer there: finished, nothing handed. */
  sent(f, 504, "aa4", MSG_DLR_DELIVERED, 0, 0);
  f->edge.no_account = true;
  v = receipt_in(f, &persist_edge, "aa4", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_MATCHED);
  CU_ASSERT_EQUAL(f->edge.handed, 0);
  CU_ASSERT_EQUAL(f->edge.n_finished, 2);
  teardown(f);
}

static void test_unmatched(void)
{
  struct fixture *f = setup();
  struct path_receipt_verdict v = receipt_in(f, &persist_edge, "nope", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_UNMATCHED);
  CU_ASSERT_EQUAL(f->edge.records, 0);
  CU_ASSERT_EQUAL(f->edge.handed, 0);
  teardown(f);
}

static void test_journal_refused(void)
{
  struct fixture *f = setup();
  /* The receipt's record refused: the SMSC must send it again. */
  sent(f, 505, "aa5", MSG_DLR_DELIVERED, 0, 0);
  f->edge.journal_fail_type = SPOOL_REC_RECEIPT;
  struct path_receipt_verdict v = receipt_in(f, &persist_edge, "aa5", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_REFUSED);
  /* The message's finish refused: likewise. */
  sent(f, 506, "aa6", MSG_DLR_DELIVERED, 0, 0);
  f->edge.journal_fail_type = SPOOL_REC_FINISHED;
  v = receipt_in(f, &persist_edge, "aa6", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_REFUSED);
  /* Persist off: nothing journaled, nothing to wait for. */
  sent(f, 507, "aa7", MSG_DLR_DELIVERED, 0, 0);
  f->edge.journal_fail_type = 0;
  unsigned records = f->edge.records;
  v = receipt_in(f, &memory_edge, "aa7", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_MATCHED);
  CU_ASSERT_EQUAL(v.ticket, 1);
  CU_ASSERT_EQUAL(f->edge.records, records);
  teardown(f);
}

static void test_combined_parts(void)
{
  struct fixture *f = setup();
  /* A message of two parts on a connector that answers once for the
   * whole: the first part's delivery is held, the second's passes. */
  struct receipt_join_key k = { .origin_connector = IN, .origin_user = "shop", .origin_ref = "ref-601",
                                .seq = 1, .total = 2 };
  uint64_t ids[2] = { 601, 602 };
  CU_ASSERT_FATAL(receipt_join_register_whole(f->core.receipt_join, &k, ids, time(NULL)));
  sent(f, 601, "p1", MSG_DLR_DELIVERED, 1, 2);
  sent(f, 602, "p2", MSG_DLR_DELIVERED, 2, 2);
  struct path_receipt_verdict v = receipt_in(f, &persist_edge, "p1", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_MATCHED);
  CU_ASSERT_EQUAL(f->edge.handed, 0);
  v = receipt_in(f, &persist_edge, "p2", MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(v.outcome, PATH_RECEIPT_MATCHED);
  CU_ASSERT_EQUAL(f->edge.handed, 1);
  teardown(f);
}

static void test_outcome_names(void)
{
  CU_ASSERT_STRING_EQUAL(path_receipt_outcome_name(PATH_RECEIPT_MATCHED), "matched");
  CU_ASSERT_STRING_EQUAL(path_receipt_outcome_name(PATH_RECEIPT_UNMATCHED), "unmatched");
  CU_ASSERT_STRING_EQUAL(path_receipt_outcome_name(PATH_RECEIPT_REFUSED), "refused");
  CU_ASSERT_STRING_EQUAL(path_receipt_outcome_name(PATH_RECEIPT_REFUSED + 1), "?");
}

void suite_path_receipt(void);
void suite_path_receipt(void)
{
  static const struct test_case cases[] = {
    { "matched, final: to the origin, finished, entry gone", test_matched_final },
    { "matched, not final: entry kept, not finished", test_matched_not_final },
    { "matched, not for the origin: not wanted, account gone", test_not_wanted },
    { "unmatched: nothing done", test_unmatched },
    { "journal refused: the SMSC sends again; persist off", test_journal_refused },
    { "combined parts: the whole's answer alone passes", test_combined_parts },
    { "outcome names", test_outcome_names },
    { NULL, NULL },
  };
  test_add_suite("path_receipt", cases);
}
