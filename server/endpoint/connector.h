/* connector.h - a configured connector: its instances (one thread and one
 * session each), its queues, and for server connectors the listener.
 *
 * Client connectors (we bind to an SMSC) take messages from their queue
 * and send them, record the SMSC's ids in the DLR table, and turn the
 * receipts that come back into receipts for the messages' origins. Server
 * connectors (clients bind to us) accept submits into the core and deliver
 * receipts to whichever of their sessions has the origin account bound.
 *
 * Everything a session touches happens in its instance's thread; other
 * threads reach an instance only through queues and evloop_wake.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CONNECTOR_H
#define EMG_CONNECTOR_H

#include <stdbool.h>
#include "config.h"
#include "core.h"
#include "log.h"
#include "path.h"
#include "tables.h"

struct connector;
struct instance;

/* Creates connector number index of core->cfg (threads not started yet).
 * NULL with a reason in err on failure. */
struct connector *connector_create(struct core *core, unsigned index, char *err, size_t err_len);

/* Starts the instance threads (and the listener of a server connector).
 * Returns 0, or -1 with err filled. */
int connector_start(struct connector *c, char *err, size_t err_len);

/* Server connectors: stop taking connections and submits; the sessions
 * finish what is in flight and close. Returns at once. */
void connector_stop_accepting(struct connector *c);

/* Stops every session (unbind where the protocol has it) and, once they are
 * closed or after timeout_ms, ends the threads and joins them. */
void connector_stop(struct connector *c, unsigned timeout_ms);

void connector_destroy(struct connector *c);

/* The queue of messages waiting to go out through a client connector. */
struct queue *connector_out_queue(struct connector *c);

/* The queue of receipts for account user of a server connector, or NULL
 * when the connector has no such user. */
struct queue *connector_user_queue(struct connector *c, const char *user);

/* Drops what waits in the queue of the account in slot (a removed
 * account's): messages fail with a receipt to their origin, receipts go. */
void connector_drop_account_queue(struct connector *c, int slot, const char *why);

/* Accounts changed: each instance unbinds a session whose account may no
 * longer use it (in its own thread, soon after). */
void connector_accounts_changed(struct connector *c);

const struct config_connector *connector_config(const struct connector *c);

/* A reload's tls group (next, checked by the configuration): its
 * certificates for the connections to come, those made keep theirs. -1
 * with err when HTTPS could not read them (the running ones stay). */
int connector_tls_reload(struct connector *c, const struct config_tls *next, char *err, size_t err_len);

/* Pausing a connector stops its instances from sending; its queues hold
 * what arrives meanwhile, and resuming sends it. Each call writes the set
 * of paused connectors to spool_dir (pause_state.h), so that a pause
 * outlives a restart; when that cannot be written the error is logged and
 * the pause or resume holds until emgd stops. Callable from any thread. */
void connector_pause(struct connector *c, bool paused);
bool connector_paused(const struct connector *c);

/* At start, after the journal gave back the queues and before any
 * connector_start: pauses the connectors the file of paused connectors
 * names, each logged with the messages waiting for it. A name no longer
 * configured is logged and dropped from the file; a line that is no
 * connector name is logged as an error with the file and line, and the
 * names on the other lines still pause (nothing is resumed on a guess).
 * Returns 0, or -1 with err when the file is there but cannot be read:
 * emgd cannot tell then which connectors the operator held. */
int connector_pause_restore(struct core *core, struct log_category *log, char *err, size_t err_len);

/* Why the router's groups pass c over now ("paused", "no session bound",
 * "its queue is full (max_queue)"), or NULL when it can take a message. */
const char *connector_unusable(struct connector *c);

/* Moves what waits in client connector c's queue to the other connectors of
 * each message's route (failover and weighted groups) that can take it now;
 * a message whose route has no other such member stays, in order. Each move
 * is journaled, is in the message's history and counted as rerouted.
 * Returns 0 with the counts, -1 for a server connector. Callable from any
 * thread; meant for a paused connector (one that sends takes its share of
 * the queue meanwhile). */
int connector_drain(struct connector *c, size_t *moved, size_t *stayed);

/* Who holds a message before it is queued. */
enum connector_held {
  CONNECTOR_NOT_HELD,          /* nobody: it goes to its queue now */
  CONNECTOR_HELD_JOINING,      /* the MO joiner: a part of a long MO (or one it had already) */
  CONNECTOR_HELD_SCHEDULED     /* the schedule: its deferred time is ahead */
};

/* Before message item *it, routed to connector target, is queued: the
 * parts of a long MO from an SMSC for an application are joined (*it
 * becomes the joined message with the last part), and a message whose
 * deferred time is ahead of now (Unix s) is held, by every server connector
 * and by client ones unless their deferred_delivery is "pass". Returns who
 * took it; with CONNECTOR_NOT_HELD, *it goes to its queue. in: the
 * instance whose thread this is (what it journals goes into its batch, in
 * order with the rest), or NULL in any other thread. */
enum connector_held connector_hold(struct core *core, struct instance *in, struct qitem **it, unsigned target,
                                   int64_t now);

/* For schedule_release: a held message whose time came, to its connector's
 * queue (ctx: the core). */
void connector_release_due(void *ctx, unsigned target, struct qitem *it);

/* For the holders' expiry (mo_join_expire) and the schedule: a held
 * message to its connector's queue, as it is (ctx: the core). */
void connector_release_part(void *ctx, unsigned target, struct qitem *it);

/* The connector's queues: its out queue, then one per account (server). */
unsigned connector_queue_count(const struct connector *c);
struct queue *connector_queue(struct connector *c, unsigned i);

/* Takes message id out of the connector's queues (an operator dropping a
 * stuck message, a client cancelling it; why says which, for the log and
 * its history): its origin gets a DELETED receipt. Returns 1 when it was
 * found, else 0. Callable from any thread; in: the instance whose thread
 * this is, or NULL (as for connector_hold). */
int connector_drop_message(struct connector *c, struct instance *in, uint64_t id, const char *why);

/* Takes message id out of what the gateway holds until its time, as
 * connector_drop_message does. Returns 1 when it was held, else 0. */
int connector_cancel_scheduled(struct core *core, struct instance *in, uint64_t id, const char *why);

/* The connector's position in the configuration (and the core's array). */
unsigned connector_index(const struct connector *c);

/* A receipt from the SMSC behind client connector c that the journal kept
 * unmatched (UNRESOLVED journal_id): the connector tries to match it again
 * once it runs, as if it had just come, then ends the record. Before
 * connector_start only. Returns -1 when c takes no receipts from an SMSC
 * (a server or HTTP connector now) or memory is short. */
int connector_adopt_receipt(struct connector *c, const char *key, const struct msg_receipt *r,
                            uint64_t journal_id);

/* A receipt whose message this node's DLR table does not hold (it was sent
 * through another node, or its entry is gone), resolved through the
 * database: queued for the origin account as a local one would be (and
 * journaled). via: the connector it came through (its index here), or -1.
 * Returns 0, or -1 when the account is not here. Any thread; in: the
 * instance whose thread this is, or NULL. The cluster thread reaches it
 * (and connector_user_bound) through core->origin. */
int connector_receipt_for_origin(struct core *core, struct instance *in, const struct dlr_info *info,
                                 const struct msg_receipt *r, int via);

/* Whether a session of account user is bound to connector c now (as the
 * instances last published it). */
bool connector_user_bound(struct connector *c, const char *user);

/* Restart (persist on): puts a message or receipt recovered from the
 * journal back where it waits. Called before connector_start. Messages to a
 * server connector go to the account the routes give (they are routed
 * again); returns 0, or -1 when there is no such account any more. */
int connector_restore(struct core *core, unsigned target, struct qitem *it, const char *user);

/* Messages and receipts waiting in the connector's queues now. */
size_t connector_queued(struct connector *c);

/* Messages alone (receipts not counted) waiting in its queues now: a walk
 * of the queues, for the start and the stop rather than the message path. */
size_t connector_queued_messages(struct connector *c);

/* Latencies as Prometheus histograms: counts per bucket (not cumulative),
 * bucket i holding values up to connector_latency_bounds_us[i]; the last
 * bucket holds everything larger (+Inf). */
#define CONNECTOR_LATENCY_BUCKETS 17
extern const uint64_t connector_latency_bounds_us[CONNECTOR_LATENCY_BUCKETS - 1];
struct connector_latency {
  uint64_t buckets[CONNECTOR_LATENCY_BUCKETS];
  uint64_t count;
  uint64_t sum_us;
};

/* What the admin API shows of one instance: a copy its thread publishes a
 * few times a second (the session itself is the thread's alone). */
/* ---- the journal at start ---- */

/* Where the replay (path_replay_open, with the core as its ctx) puts back
 * what the journal kept: the connectors' queues, the schedule, the MO
 * joiner, the cluster or an SMSC connector for receipts matched by none. */
extern const struct path_replay_edge connector_replay_edge;

struct connector_instance_info {
  unsigned index;
  const char *state;               /* "down", "connecting", "binding", "bound", "unbinding", "idle" */
  char peer[64];                   /* "HOST:PORT", "" when down */
  char user[MSG_USER_LEN];         /* server: the bound account; client: our system_id */
  char bind[4];                    /* "tx", "rx", "trx" or "" */
  unsigned window_used, window;    /* requests awaiting a response, of at most */
  uint64_t submits_in;             /* messages taken from this session (server) or MOs (client) */
  uint64_t submits_out;            /* messages sent and accepted */
  uint64_t receipts_in, receipts_out;
  uint64_t refused;                /* requests we answered with an error */
  uint64_t errors;                 /* responses with an error, time-outs, decode errors */
  uint64_t reconnects;
  int64_t connected_since;         /* Unix seconds, 0 when down */
  char last_error[160];            /* "" when none yet */
  int64_t last_error_time;         /* Unix seconds */
  struct connector_latency ack;    /* server: submit in -> its ack out (journal and soft limit included) */
  struct connector_latency response; /* request out -> its response in (the peer's answer time) */
  struct connector_latency delivery; /* client: accepted from the origin -> accepted by the SMSC */
};

/* Instances of the connector, and the published view of instance i:
 * 0, or -1 when there is no instance i. Callable from any thread. */
unsigned connector_instance_count(const struct connector *c);
int connector_instance_info(struct connector *c, unsigned i, struct connector_instance_info *out);

/* Sessions now bound, over all instances. */
unsigned connector_bound(const struct connector *c);

#endif
