/* cluster.c - id ranges, heartbeats, receipts and accounts between
 * nodes, in one thread on its own database connection.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "account.h"
#include "clock.h"
#include "cluster.h"
#include "core.h"
#include "db.h"

#define ID_RANGE 1000000              /* ids per range from the shared sequence */
#define HEARTBEAT_MS 5000
#define LOOKUP_TRIES 10               /* a receipt is looked up this often, */
#define LOOKUP_RETRY_MS 500           /* this far apart: the log lags by up to a batch */
#define DOWN_RETRY_MS 2000            /* the database away: tried again after */
#define DOWN_KEEP_MS 600000           /* and given up after this long */
#define PENDING_MAX 100000            /* receipts waiting to be resolved, at most */
#define CLAIM_MAX 500
#define SETTLE_MS 5000                /* the journal's commit of what a claim took, at most */
#define ACCOUNTS_LIST_MS 1000         /* every node takes the accounts' changes this often */

struct pending {
  struct pending *next;
  uint16_t connector;
  char key[DLR_ID_LEN];
  struct msg_receipt receipt;
  unsigned tries;
  uint64_t due_ms, first_ms;
  uint64_t journal_id;                /* its UNRESOLVED record; 0 with persist off */
  bool counted;                       /* found in the log: logged and counted once, whatever retries follow */
};

struct cluster {
  struct core *core;
  struct db *db;                      /* the thread's */
  struct db *lookups;                 /* cluster_message's (the admin thread) */
  cluster_accounts_sync_fn sync_accounts;
  char name[64];
  pthread_t thread;
  bool started;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  bool stopping;
  bool push_due;                      /* an account took half its credit batch: push it now */
  struct pending *in_head, *in_tail;  /* from connector threads */
  unsigned in_count;
  struct pending *waiting;            /* the thread's: to be looked up (again) */
  _Atomic unsigned waiting_count;    /* written by the thread, read by others (limits, stats) */
  _Atomic uint64_t resolved, handed_over, claimed, unresolved, id_ranges;
  _Atomic bool connected;
  char last_error[256];               /* under lock */
  struct log_category *log;
};

static void note_error(struct cluster *c, const char *what, const char *err)
{
  pthread_mutex_lock(&c->lock);
  bool was = atomic_exchange(&c->connected, false);
  snprintf(c->last_error, sizeof c->last_error, "%.48s: %.200s", what, err);
  pthread_mutex_unlock(&c->lock);
  if (was)
    LOGW(c->log, "database: %s: %s (the node goes on alone and keeps trying)", what, err);
}

static void note_ok(struct cluster *c)
{
  if (!atomic_exchange(&c->connected, true))
    LOGI(c->log, "database reachable: ids, receipts between nodes and heartbeats resume");
}

static int connector_index(const struct core *core, const char *name)
{
  for (unsigned i = 0; i < core->cfg->n_connectors; i++)
    if (strcmp(core->cfg->connectors[i].name, name) == 0)
      return (int)i;
  return -1;
}

/* A DLR entry's worth of a message known from the database: where its
 * receipt goes. -1 when its origin connector is not configured here. */
static int info_make(const struct core *core, struct dlr_info *info, uint64_t msg_id, const char *origin,
                     const char *user, const char *ref, uint8_t dlr_mask, int64_t submit_time,
                     const struct msg_addr *src, const struct msg_addr *dst)
{
  int index = connector_index(core, origin);
  if (index < 0)
    return -1;
  memset(info, 0, sizeof *info);
  info->msg_id = msg_id;
  info->origin_connector = (uint16_t)index;
  info->dlr_mask = dlr_mask;
  info->submit_time = submit_time;
  snprintf(info->origin_user, sizeof info->origin_user, "%s", user);
  snprintf(info->origin_ref, sizeof info->origin_ref, "%s", ref);
  info->src = *src;
  info->dst = *dst;
  return 0;
}

/* The log knows the message: its receipt goes to the origin here, or to
 * the node that accepted it. false when the hand-over could not be written
 * (the database went away): to be tried again. */
static bool resolved(struct cluster *c, struct pending *p, const struct db_message *row)
{
  struct core *core = c->core;
  struct dlr_info info;
  if (info_make(core, &info, row->id, row->origin_connector, row->origin_user, row->origin_ref,
                row->dlr_mask, row->received_ms / 1000, &row->src, &row->dst) < 0) {
    atomic_fetch_add(&c->unresolved, 1);
    LOGW(c->log, "receipt for message %" PRIu64 ": its origin connector %s is not configured here",
         row->id, row->origin_connector);
    return true;
  }
  if (!p->counted) {
    p->counted = true;
    core_log_receipt(core, row->id, NULL, -1, &p->receipt);
    if (p->receipt.state == MSG_STATE_DELIVERED)
      atomic_fetch_add(&core->stats.delivered, 1);
  }
  struct connector *origin = core_connector(core, info.origin_connector);
  if (row->node_id == core->cfg->node_id || core->origin->user_bound(origin, info.origin_user)) {
    if (core->origin->deliver_receipt(core, &info, &p->receipt, p->connector) == 0)
      atomic_fetch_add(&c->resolved, 1);
    return true;
  }
  /* The origin did not ask for this state: nothing to pass on, and unless
   * the state is final (the origin node's DLR entry and journal record
   * close with it) nothing to hand over. */
  if (!msg_receipt_wanted(row->dlr_mask, p->receipt.state) && !msg_state_final(p->receipt.state)) {
    atomic_fetch_add(&c->resolved, 1);
    LOGD(c->log, "receipt for message %" PRIu64 " (state %u): not asked for, not handed to node %u", row->id,
         p->receipt.state, row->node_id);
    return true;
  }
  struct db_handoff h;
  memset(&h, 0, sizeof h);
  h.msg_id = row->id;
  h.dlr_mask = row->dlr_mask;
  snprintf(h.origin_connector, sizeof h.origin_connector, "%s", row->origin_connector);
  snprintf(h.origin_user, sizeof h.origin_user, "%s", row->origin_user);
  snprintf(h.target_connector, sizeof h.target_connector, "%s", core->cfg->connectors[p->connector].name);
  snprintf(h.smsc_id, sizeof h.smsc_id, "%s", p->key);
  h.receipt = p->receipt;
  snprintf(h.receipt.id, sizeof h.receipt.id, "%s", row->origin_ref);
  h.receipt.src = row->src;
  h.receipt.dst = row->dst;
  if (!h.receipt.submit_time)
    h.receipt.submit_time = row->received_ms / 1000;
  char err[DB_ERR_LEN];
  if (db_receipt_handoff(c->db, core->cfg->node_id, row->node_id, &h, err, sizeof err) < 0) {
    note_error(c, "handing a receipt over", err);
    return false;
  }
  atomic_fetch_add(&c->handed_over, 1);
  LOGD(c->log, "receipt for message %" PRIu64 " handed to node %u", row->id, row->node_id);
  return true;
}

/* The cluster is done with a receipt: its UNRESOLVED record dies. */
static void pending_done(struct cluster *c, struct pending *p)
{
  if (p->journal_id)
    core_journal(c->core, &(struct spool_record){ .type = SPOOL_REC_RECEIPT_DONE, .id = p->journal_id });
  free(p);
}

/* Looks the waiting receipts up; keeps those to try again. */
static void lookup_due(struct cluster *c, uint64_t now)
{
  struct pending **link = &c->waiting;
  while (*link) {
    struct pending *p = *link;
    if (p->due_ms > now) {
      link = &p->next;
      continue;
    }
    struct db_message row;
    char err[DB_ERR_LEN];
    int rc = db_receipt_lookup(c->db, c->core->cfg->connectors[p->connector].name, p->key, &row, err, sizeof err);
    bool done;
    if (rc == 1) {
      note_ok(c);
      done = resolved(c, p, &row);   /* false: the hand-over failed (noted); tried again */
    } else if (rc == 0) {
      note_ok(c);
      done = ++p->tries >= LOOKUP_TRIES;
      if (done) {
        atomic_fetch_add(&c->unresolved, 1);
        atomic_fetch_add(&c->core->stats.receipts_unmatched, 1);
        LOGI(c->log, "receipt for unknown message id '%s' (state %u): not in the message log either",
             p->receipt.id, p->receipt.state);
      } else {
        p->due_ms = now + LOOKUP_RETRY_MS;
      }
    } else {
      note_error(c, "looking a receipt up", err);
      done = false;
    }
    if (!done && rc != 0) {   /* the database is away: tried again, for a while */
      if (now - p->first_ms < DOWN_KEEP_MS) {
        p->due_ms = now + DOWN_RETRY_MS;
      } else {
        done = true;
        atomic_fetch_add(&c->unresolved, 1);
        atomic_fetch_add(&c->core->stats.receipts_unmatched, 1);
        LOGW(c->log, "receipt for message id '%s' (state %u) given up: the database was away for %u s",
             p->receipt.id, p->receipt.state, DOWN_KEEP_MS / 1000);
      }
    }
    if (done) {
      *link = p->next;
      c->waiting_count--;
      pending_done(c, p);
    } else {
      link = &p->next;
    }
  }
}

/* A receipt another node resolved for a message of ours. */
static int take_handed(void *arg, const struct db_handoff *h)
{
  struct cluster *c = arg;
  struct core *core = c->core;
  struct dlr_info info;
  int target = connector_index(core, h->target_connector);
  /* Our own DLR entry knows the origin best (an HTTP origin's callback
   * too); taking it out also closes it. */
  bool local = target >= 0 && dlrtab_lookup(core->dlr, (uint16_t)target, h->smsc_id,
                                            msg_state_final(h->receipt.state), &info);
  if (local && msg_state_final(h->receipt.state)) {
    struct spool_record rec = { .type = SPOOL_REC_FINISHED, .id = info.msg_id };
    core_journal(core, &rec);
  }
  /* Without it, the hand-over is all there is, the receipt mask included. */
  if (!local && info_make(core, &info, h->msg_id, h->origin_connector, h->origin_user, h->receipt.id,
                          h->dlr_mask, h->receipt.submit_time, &h->receipt.src, &h->receipt.dst) < 0) {
    LOGW(c->log, "receipt for message %" PRIu64 " from node %u: no connector %s here: dropped",
         h->msg_id, h->from_node, h->origin_connector);
    return 0;
  }
  if (core->origin->deliver_receipt(core, &info, &h->receipt, target) < 0)
    LOGW(c->log, "receipt for message %" PRIu64 " from node %u: account %s is not here: dropped",
         h->msg_id, h->from_node, h->origin_user);
  atomic_fetch_add(&c->claimed, 1);
  return 0;
}

/* Before a claim deletes the receipts it took, the records take_handed
 * journaled for them (RECEIPT, FINISHED) are made durable: a crash after
 * the delete must find them in the journal. */
static int claim_settle(void *arg)
{
  struct cluster *c = arg;
  return core_journal_settle(c->core, SETTLE_MS);
}

static void claim(struct cluster *c)
{
  char err[DB_ERR_LEN];
  int n = db_receipt_claim(c->db, c->core->cfg->node_id, CLAIM_MAX, take_handed, claim_settle, c, err, sizeof err);
  if (n < 0)
    note_error(c, "claiming receipts", err);
  else
    note_ok(c);
}

static void top_up_ids(struct cluster *c)
{
  struct ids *ids = &c->core->ids;
  if (!ids_want_range(ids))
    return;
  uint64_t first;
  char err[DB_ERR_LEN];
  if (db_id_block(c->db, ID_RANGE, ids_high_water(ids), &first, err, sizeof err) < 0) {
    note_error(c, "taking an id range", err);
    return;
  }
  note_ok(c);
  ids_offer(ids, first, ID_RANGE);
  atomic_fetch_add(&c->id_ranges, 1);
}

/* The credit taken here pushed; with list, the accounts' changes taken. */
static void sync_accounts(struct cluster *c, bool list)
{
  char err[DB_ERR_LEN];
  if (c->sync_accounts(c->core, c->db, list, err, sizeof err) < 0)
    note_error(c, "accounts", err);
}

/* From a submitting thread: an account's credit wants pushing now. */
static void push_due(void *arg)
{
  struct cluster *c = arg;
  pthread_mutex_lock(&c->lock);
  c->push_due = true;
  pthread_cond_signal(&c->wake);
  pthread_mutex_unlock(&c->lock);
}

static void *cluster_main(void *arg)
{
  struct cluster *c = arg;
  uint64_t last_beat = 0, last_list = clock_now_ms(), last_round = 0;
  pthread_mutex_lock(&c->lock);
  while (!c->stopping) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += CLUSTER_POLL_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    if (!c->push_due)
      pthread_cond_timedwait(&c->wake, &c->lock, &until);
    if (c->stopping)
      break;
    bool push_only = c->push_due && clock_now_ms() - last_round < CLUSTER_POLL_MS;
    c->push_due = false;
    if (push_only) {
      /* Woken for credit: only that, so that a busy account does not
       * make the receipts' and ids' statements run more often. */
      pthread_mutex_unlock(&c->lock);
      sync_accounts(c, false);
      pthread_mutex_lock(&c->lock);
      continue;
    }
    /* New receipts join the waiting ones, first try after their arrival. */
    struct pending *in = c->in_head;
    unsigned n = c->in_count;
    c->in_head = c->in_tail = NULL;
    c->in_count = 0;
    pthread_mutex_unlock(&c->lock);

    while (in) {
      struct pending *next = in->next;
      in->next = c->waiting;
      c->waiting = in;
      in = next;
    }
    c->waiting_count += n;
    uint64_t now = clock_now_ms();
    last_round = now;
    lookup_due(c, now);
    claim(c);
    top_up_ids(c);
    bool list = now - last_list >= ACCOUNTS_LIST_MS;
    sync_accounts(c, list);
    if (list)
      last_list = now;
    if (now - last_beat >= HEARTBEAT_MS) {
      char err[DB_ERR_LEN];
      if (db_node_heartbeat(c->db, c->core->cfg->node_id, c->name, err, sizeof err) < 0)
        note_error(c, "heartbeat", err);
      last_beat = now;
    }
    pthread_mutex_lock(&c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

struct cluster *cluster_start(struct core *core, uint64_t first_seq, unsigned timeout_ms,
                              cluster_accounts_sync_fn accounts_sync, char *err, size_t err_len)
{
  struct cluster *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  c->core = core;
  c->sync_accounts = accounts_sync;
  c->log = log_category("emg.cluster");
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->wake, NULL);
  char dberr[DB_ERR_LEN];
  c->db = db_open(core->cfg->db_conninfo, timeout_ms, dberr, sizeof dberr);
  c->lookups = c->db ? db_open(core->cfg->db_conninfo, timeout_ms, dberr, sizeof dberr) : NULL;
  if (!c->db || !c->lookups) {
    snprintf(err, err_len, "database.conninfo: %.200s", dberr);
    cluster_stop(c);
    return NULL;
  }
  char host[48] = "";
  gethostname(host, sizeof host - 1);
  snprintf(c->name, sizeof c->name, "%s:%ld", host, (long)getpid());
  atomic_store(&c->connected, true);
  if (db_node_register(c->db, core->cfg->node_id, c->name, dberr, sizeof dberr) < 0)
    note_error(c, "registering the node", dberr);
  /* The first range; without the database, an empty one: ids go on alone
   * until the thread gets a range. */
  uint64_t first = first_seq, count = 0;
  if (db_id_block(c->db, ID_RANGE, first_seq, &first, dberr, sizeof dberr) == 0) {
    count = ID_RANGE;
    atomic_fetch_add(&c->id_ranges, 1);
  } else {
    note_error(c, "taking an id range", dberr);
  }
  ids_use_ranges(&core->ids, first, count);
  if (pthread_create(&c->thread, NULL, cluster_main, c) != 0) {
    snprintf(err, err_len, "cannot start the cluster thread");
    cluster_stop(c);
    return NULL;
  }
  pthread_setname_np(c->thread, "emg-cluster");
  c->started = true;
  accounts_on_push_due(core->accounts, push_due, c);
  return c;
}

void cluster_stop(struct cluster *c)
{
  if (!c)
    return;
  if (c->started) {
    accounts_on_push_due(c->core->accounts, NULL, NULL);
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    char err[DB_ERR_LEN];   /* the connectors are stopped: the last credit taken goes now */
    if (c->sync_accounts(c->core, c->db, false, err, sizeof err) < 0)
      LOGW(c->log, "credit taken since the last push not pushed at stop (%s): %s", err,
           c->core->spool ? "the journal keeps it for the next start" : "it is given back");
  }
  if (c->started)
    LOGI(c->log, "receipts through the database: %" PRIu64 " resolved here, %" PRIu64 " handed over, %" PRIu64
         " claimed, %" PRIu64 " unresolved; %" PRIu64 " id ranges taken, %" PRIu64 " id windows past them",
         atomic_load(&c->resolved), atomic_load(&c->handed_over), atomic_load(&c->claimed),
         atomic_load(&c->unresolved), atomic_load(&c->id_ranges), atomic_load(&c->core->ids.unbacked));
  unsigned left = c->waiting_count + c->in_count;
  if (left)
    LOGW(c->log, "%u receipts not yet resolved through the database at stop%s", left,
         c->core->spool ? ": the journal keeps them for the next start" : "");
  for (struct pending *lists[2] = { c->waiting, c->in_head }, **l = lists; l < lists + 2; l++)
    for (struct pending *p = *l, *next; p; p = next) {
      next = p->next;
      free(p);
    }
  db_close(c->db);
  db_close(c->lookups);
  pthread_cond_destroy(&c->wake);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

bool cluster_resolve_receipt(struct cluster *c, uint16_t connector, const char *key,
                             const struct msg_receipt *r, uint64_t journal_id)
{
  struct pending *p = NULL;
  pthread_mutex_lock(&c->lock);
  if (c->in_count + c->waiting_count < PENDING_MAX && (p = calloc(1, sizeof *p))) {
    p->connector = connector;
    p->journal_id = journal_id;
    snprintf(p->key, sizeof p->key, "%s", key);
    p->receipt = *r;
    p->first_ms = clock_now_ms();
    if (c->in_tail)
      c->in_tail->next = p;
    else
      c->in_head = p;
    c->in_tail = p;
    c->in_count++;
  }
  pthread_mutex_unlock(&c->lock);
  if (!p) {
    atomic_fetch_add(&c->unresolved, 1);
    atomic_fetch_add(&c->core->stats.receipts_unmatched, 1);
  }
  return p != NULL;
}

void cluster_stats(struct cluster *c, struct cluster_stats *out)
{
  memset(out, 0, sizeof *out);
  out->receipts_resolved = atomic_load(&c->resolved);
  out->receipts_handed_over = atomic_load(&c->handed_over);
  out->receipts_claimed = atomic_load(&c->claimed);
  out->receipts_unresolved = atomic_load(&c->unresolved);
  out->id_ranges = atomic_load(&c->id_ranges);
  out->ids_unbacked = atomic_load(&c->core->ids.unbacked);
  out->connected = atomic_load(&c->connected);
  pthread_mutex_lock(&c->lock);
  snprintf(out->last_error, sizeof out->last_error, "%s", c->last_error);
  out->receipts_waiting = c->in_count + atomic_load(&c->waiting_count);
  pthread_mutex_unlock(&c->lock);
}

struct db *cluster_admin_db(struct cluster *c)
{
  return c->lookups;
}

int cluster_message(struct cluster *c, uint64_t id, struct db_message *out, char *err, size_t err_len)
{
  char dberr[DB_ERR_LEN];
  int rc = db_message_get(c->lookups, id, out, dberr, sizeof dberr);
  if (rc < 0) {
    snprintf(err, err_len, "%s", dberr);
    return -1;
  }
  return rc;
}
