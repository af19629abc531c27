/* path.h - the path room: a message's way through the gateway, written once
 * for every protocol and every thread.
 *
 * A message coming in (a client's submit, an SMSC's MO, an HTTP request)
 * goes through named stages, each of which passes it on or refuses it:
 *
 *   admit -> filter -> route -> split -> charge -> journal -> stage -> ack
 *
 * admit   the account's own limits (rate, senders, ...), then room in the
 *         gateway (max_total_queue): from here the message holds a place;
 * filter  the plugins' before_receive and route hooks;
 * route   where it goes: the origin's forced SMSC, a plugin's choice or the
 *         routes; and room in that connector's queue (max_queue);
 * split   its id and the id its origin will know it by, and its parts when
 *         it is longer than one SMS;
 * charge  the account's credit, a part each, all or none;
 * journal with persist on, a record per part: the ack waits until they are
 *         durable;
 * stage   its history, the message log, and each part handed to its target
 *         (held until its time, joined with its siblings, or queued);
 * ack     the answer to the origin: at once, or held for the journal or the
 *         soft limit.
 *
 * A refusal undoes what the stages before it did, in one place and in the
 * reverse order (path_accept's unwind): the parts journaled are marked
 * finished, the credit goes back, the parts are freed, the place is given
 * back. Then the refusal is counted by reason and answered.
 *
 * What the peer answers to something the gateway sent it (a message
 * submitted to an SMSC or delivered to a client of ours, a receipt) takes
 * the response path, path_sent():
 *
 *   settle -> accepted: record -> journal -> tell
 *          -> refused:  retry | reroute | fail
 *
 * settle  the answer, and for a refusal what the connector's retry policy
 *         says of its code or class (a message out of attempts fails);
 * record  counted as sent, in its history and the message log; a submit
 *         whose peer sends receipts gets a DLR entry, keyed by the id the
 *         peer gave it;
 * journal finished, or (a DLR entry) waiting for its receipt;
 * tell    the origin, when it asked: accepted by the SMSC, delivered;
 * retry   back to the front of its queue: after a back-off that grows
 *         with each refusal (submits), or at once (deliveries, receipts);
 * reroute to another member of its route's group that has not refused it;
 *         when none can take it, as the class says (temporary: retry);
 * fail    for good: failed in the counts and its history, and a receipt to
 *         its origin (the endpoint's give_up).
 *
 * A receipt from an SMSC takes the receipt path, path_receipt():
 *
 *   match -> record -> origin -> finish -> answer
 *
 * match   the SMSC's id in the DLR table (a final state removes the
 *         entry); one that matches nothing is the endpoint's to try again
 *         or hand to the cluster;
 * record  the plugins' after_dlr, its history, the message log;
 * origin  path_receipt_to_origin(), which every receipt for an origin
 *         takes, whoever made it: wanted in this state? one part of a
 *         whole whose receipt comes once (combined receipts)? then an item
 *         for the origin account's queue, journaled, handed to the edge;
 * finish  a final state finishes the message in the journal;
 * answer  the journal ticket the SMSC's answer waits for, or refused: the
 *         SMSC is asked to send it again.
 *
 * At start, the journal's records are read again (path_replay_open): what
 * each means is written in path_replay.c, beside the stages that write
 * them.
 *
 * The path knows no protocol, session or thread: what it needs of the
 * endpoint a message came through, and of the connectors it goes to, it
 * asks through struct path_edge, struct path_sent_edge, struct
 * path_receipt_edge and struct path_replay_edge. Unit tests drive it with edges of their own
 * (tests/unit/test_path.c, test_path_sent.c, test_path_receipt.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_PATH_H
#define EMG_PATH_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "core.h"
#include "journal.h"
#include "msg.h"
#include "proto.h"
#include "tables.h"

enum path_stage {
  PATH_ADMIT,
  PATH_FILTER,
  PATH_ROUTE,
  PATH_SPLIT,
  PATH_CHARGE,
  PATH_JOURNAL,
  PATH_STAGE,
  PATH_ACK,
};

/* "admit", "filter", ...; "?" out of range. */
const char *path_stage_name(enum path_stage stage);

/* What the path asks of the rooms above it. ctx is the request's edge_ctx:
 * the endpoint instance the message came through. */
struct path_edge {
  /* The id the origin will know message m by, into m->origin.ref (m->id
   * is set); -1 when none can be given now. NULL: m->id in decimal. */
  int (*name)(void *ctx, struct msg *m);
  /* The SMSC (client) connector called name, or -1. */
  int (*smsc_named)(void *ctx, const char *name);
  /* Whether connector index can take messages now (a route group's pick). */
  bool (*usable)(void *ctx, int index);
  /* The queue a message routed to connector target waits in; user is the
   * account a route names ("": the target's only one). NULL: none. */
  struct queue *(*queue_of)(void *ctx, unsigned target, const char *user);
  /* The parts one message became, before they are journaled (their
   * receipts may be combined into one for the origin). May be NULL. */
  void (*parts_made)(void *ctx, const struct qlist *parts, unsigned target);
  /* Appends a record to the journal (into the instance's batch); the
   * ticket to wait for before an ack, or 0 when the journal refuses.
   * NULL with persist off. */
  uint64_t (*journal)(void *ctx, const struct spool_record *rec);
  /* Hands part it to connector target, to wait in q (or be held). */
  void (*hand_over)(void *ctx, unsigned target, struct queue *q, struct qitem *it, int64_t now);
  /* Answers the origin: status, and with PROTO_OK the id it knows the
   * message by; after hold_ms and once journal ticket is durable (0:
   * nothing to wait for). received_ns: when the request came, for the ack
   * latency. */
  void (*answer)(void *ctx, const void *reply, enum proto_status status, const char *ref, unsigned hold_ms,
                 uint64_t ticket, uint64_t received_ns);
};

/* One message coming in. */
struct path_request {
  struct core *core;
  const struct path_edge *edge;
  void *edge_ctx;
  struct log_category *log;         /* the endpoint's: the path logs there */
  unsigned connector, instance;     /* where it came in */
  struct id_block *ids;             /* the instance's block of ids */
  uint8_t *concat_ref;              /* the reference of the next message split here */
  const struct msg *msg;
  const char *user;                 /* the origin's account name */
  int account;                      /* its slot, or -1 */
  const char *route_to;             /* an SMSC connector the origin chose, or NULL */
  bool stopping;                    /* its endpoint is stopping: refused as if the gateway were full */
  const void *reply;                /* what the edge needs to answer; the path never reads it */
};

/* What became of it. */
struct path_verdict {
  enum proto_status status;         /* PROTO_OK: accepted */
  enum path_stage stage;            /* the stage that refused it; PATH_ACK when accepted */
  enum core_refusal why;            /* when refused: the reason it is counted under (else unset) */
  uint64_t id;                      /* accepted: the message's id (its first part's) */
  int target;                       /* accepted: the connector it went to */
  uint64_t received_ns;             /* monotonic: when it came */
};

/* Takes the message through every stage and answers it (edge->answer),
 * accepted or refused; v says which. Any thread; the router and plugins it
 * uses are held for it (core_enter). */
void path_accept(const struct path_request *rq, struct path_verdict *v);

/* The journal record of message m moved to connector target (drained or
 * rerouted): marked a copy of its acceptance, so that a replay takes the
 * later one for where it waits and counts its credit once. */
struct spool_record path_moved_record(const struct msg *m, unsigned target);

/* ---- the response path ---- */

enum path_sent_outcome {
  PATH_SENT_FINISHED,               /* accepted, and needs nothing more */
  PATH_SENT_AWAITS_RECEIPT,         /* accepted, its receipt to come (a DLR entry) */
  PATH_SENT_RETRY,                  /* refused: to be sent again (edge->again) */
  PATH_SENT_REROUTED,               /* refused: moved to another connector (edge->reroute) */
  PATH_SENT_FAILED,                 /* refused for good (edge->give_up) */
};

/* "finished", "awaits receipt", ...; "?" out of range. */
const char *path_sent_outcome_name(enum path_sent_outcome outcome);

/* What the response path asks of the endpoint that sent. ctx is the
 * request's edge_ctx. */
struct path_sent_edge {
  /* Journals a record that names a message (or receipt) id only. NULL
   * with persist off. */
  void (*journal_event)(void *ctx, enum spool_record_type type, uint64_t id, uint16_t target, const char *key);
  /* Puts it back first in the queue it was taken from, to go again; a
   * submit after backoff_ms (the endpoint waits that long), else when the
   * peer can take it. */
  void (*again)(void *ctx, struct qitem *it, uint64_t backoff_ms);
  /* Moves message it to another member of its route's group; why: the
   * refusal. False when none can take it now (it stays the caller's). */
  bool (*reroute)(void *ctx, struct qitem *it, const char *why);
  /* Fails message it for good: its origin gets a receipt in state (code:
   * the peer's error, 0 for the gateway's own doing). Frees it. */
  void (*give_up)(void *ctx, struct qitem *it, uint8_t state, uint32_t code);
  /* A receipt for the origin of a message, if it wants this state. */
  void (*tell_origin)(void *ctx, const struct dlr_info *info, const struct msg_receipt *r);
};

/* One answer to something sent. */
struct path_sent_request {
  struct core *core;
  const struct path_sent_edge *edge;
  void *edge_ctx;
  struct log_category *log;
  unsigned connector;               /* the connector that sent it */
  const struct config_connector *cfg; /* ... its retry policy and id type */
  bool delivery;                    /* sent to a client of ours (else submitted to an SMSC) */
  bool peer_receipts;               /* the peer sends receipts matched by the id it answers with */
  const char *peer;                 /* a delivery's account: its history names it */
  uint64_t backoff_ms;              /* the sender's back-off after its last refusal; 0: none */
  struct qitem *it;                 /* what was sent: a message or a receipt; the path's now */
  enum proto_status status;         /* the answer */
  uint32_t raw_status;              /* ... the peer's own code */
  const char *msgid;                /* ... the id the peer gave (a submit's) */
  const char *why;                  /* ... a refusal described, for logs and the history */
};

struct path_sent_verdict {
  enum path_sent_outcome outcome;
  uint64_t backoff_ms;              /* the sender's back-off from now on (0 after an acceptance) */
};

/* The plugins' after_send hooks hear of message m on connector: sent,
 * refused for now, or failed (also for one that never went: expired,
 * refused by before_send). Any thread (core_enter). */
void path_plugins_sent(struct core *core, const struct msg *m, const char *connector,
                       enum emg_plugin_send_status status);

/* Takes the answer through the response path; it is done with (freed,
 * requeued, moved or failed) when this returns. Any thread; the plugins'
 * after_send hooks are held for it (core_enter). */
void path_sent(const struct path_sent_request *rq, struct path_sent_verdict *v);

/* ---- the receipt path ---- */

enum path_receipt_outcome {
  PATH_RECEIPT_MATCHED,             /* passed on; answer the SMSC once ticket is durable */
  PATH_RECEIPT_UNMATCHED,           /* no DLR entry (yet): nothing was done */
  PATH_RECEIPT_REFUSED,             /* the journal refused its records: the SMSC must send it again */
};

/* "matched", "unmatched", "refused"; "?" out of range. */
const char *path_receipt_outcome_name(enum path_receipt_outcome outcome);

/* What the receipt path asks of the thread it runs in. ctx is the
 * request's edge_ctx. */
struct path_receipt_edge {
  /* The queue of account user on connector index, or NULL. */
  struct queue *(*account_queue)(void *ctx, unsigned connector, const char *user);
  /* Appends a record to the journal; its ticket, or 0 when the journal
   * refuses. NULL with persist off. */
  uint64_t (*journal)(void *ctx, const struct spool_record *rec);
  /* Hands receipt it to queue q. */
  void (*hand_over)(void *ctx, struct queue *q, struct qitem *it);
};

/* A receipt for the origin of a message. */
struct path_origin_request {
  struct core *core;
  const struct path_receipt_edge *edge;
  void *edge_ctx;
  struct log_category *log;
  struct id_block *ids;             /* the calling thread's block of ids (its journal id) */
  const struct dlr_info *info;      /* the message, as its DLR entry keeps it */
  const struct msg_receipt *receipt;
  int via;                          /* the connector the message went out on; -1 unknown */
};

/* Passes a receipt to the origin of a message, when the origin wants it.
 * True when it was handed over; false when the origin does not want this
 * state, hears of the message as a whole, or its account is not there.
 * *ticket: the journal ticket of its record (1 when nothing was
 * journaled, 0 when the journal refused it). */
bool path_receipt_to_origin(const struct path_origin_request *rq, uint64_t *ticket);

/* A receipt from an SMSC. */
struct path_receipt_request {
  struct core *core;
  const struct path_receipt_edge *edge;
  void *edge_ctx;
  struct log_category *log;
  struct id_block *ids;
  unsigned connector;               /* the SMSC's connector */
  const char *key;                  /* its id, normalized as the connector writes them (dlr_id_normalize) */
  const struct msg_receipt *receipt;
};

struct path_receipt_verdict {
  enum path_receipt_outcome outcome;
  uint64_t msg_id;                  /* matched: the message */
  uint64_t ticket;                  /* matched: what the SMSC's answer waits for (1: nothing) */
};

void path_receipt(const struct path_receipt_request *rq, struct path_receipt_verdict *v);

/* Keeps a receipt from connector that matched nothing yet (key: its id
 * normalized) in the journal: UNRESOLVED, live until a RECEIPT_DONE, so
 * that a restart tries it again. Appended at once, not into a thread's
 * batch, so that it comes before the RECEIPT_DONE that ends it, from
 * whichever thread. Its journal id, or 0 when the journal refused it;
 * *ticket: what must be durable before the SMSC hears we have it. */
uint64_t path_receipt_keep_unmatched(struct core *core, struct id_block *ids, unsigned connector, const char *key,
                                     const struct msg_receipt *r, uint64_t *ticket);

/* Split messages whose connector answers their origin once for all parts
 * (long_receipts = "combined"): the parts one message became, and a part
 * the journal gave back at start. */
void path_join_parts(struct core *core, const struct qlist *parts, unsigned target);
void path_join_replayed(struct core *core, const struct msg *m, unsigned target);

/* ---- the journal read again at start ---- */

/* Where a message held before its queue went. */
enum path_held {
  PATH_NOT_HELD,                    /* nowhere: it goes to its queue now */
  PATH_HELD_JOINING,                /* a part of a long MO, waiting for the rest */
  PATH_HELD_SCHEDULED               /* its deferred time is ahead */
};

/* What became of a receipt the journal kept unmatched. */
enum path_unresolved {
  PATH_UNRESOLVED_DROPPED,          /* nobody takes it: given up, its record ends */
  PATH_UNRESOLVED_TO_CLUSTER,       /* resolved through the database */
  PATH_UNRESOLVED_ADOPTED           /* its SMSC connector tries it again against the DLR table */
};

/* What the replay asks of the rooms above: where things wait. ctx is the
 * edge_ctx given to path_replay_open. */
struct path_replay_edge {
  /* Puts message or receipt it back in connector target's queue (a
   * receipt: account user's); -1 when there is none any more. */
  int (*restore)(void *ctx, unsigned target, struct qitem *it, const char *user);
  /* Holds message *it for connector target until its time, or with the
   * other parts of its long MO; PATH_NOT_HELD: it stays the caller's. */
  enum path_held (*hold)(void *ctx, struct qitem **it, unsigned target, int64_t now);
  /* Once the replay is over: a receipt kept unmatched from connector. */
  enum path_unresolved (*unresolved)(void *ctx, unsigned connector, const char *key, const struct msg_receipt *r,
                                     uint64_t journal_id);
};

/* What a replay gave back. */
struct path_replay_summary {
  uint64_t messages;               /* queued again */
  uint64_t awaiting_receipt;       /* sent: their DLR entries back in the table */
  uint64_t receipts;               /* for origins, queued again */
  uint64_t unresolved;             /* matching no message yet */
  uint64_t dropped;                /* no memory, or no connector to go to any more */
  uint64_t scheduled, joining;     /* held until their time; parts of long MOs */
  uint64_t max_id;                 /* the highest id the journal named: ids go on past it */
  size_t evicted;                  /* awaiting receipts that did not fit in the DLR table */
  unsigned credit_restored;        /* accounts whose credit the journal set */
};

struct path_replay;

/* Opens the journal in dir (persist on; into core->spool) and puts back
 * what it holds, each record as path_replay.c says, before any connector
 * starts. Returns what waits for the cluster (hand it over with
 * path_replay_finish once the cluster runs, or without one), or NULL with
 * the reason in err when the journal cannot open (sum still says
 * credit_restored). */
struct path_replay *path_replay_open(struct core *core, const char *dir, const struct spool_options *opt,
                                     struct log_category *log, const struct path_replay_edge *edge, void *edge_ctx,
                                     struct path_replay_summary *sum, char *err, size_t err_len);

/* The receipts the journal kept unmatched go to edge->unresolved now (the
 * cluster runs); what nobody takes is given up (its record ends). Frees
 * r; NULL does nothing. */
void path_replay_finish(struct path_replay *r);

#endif
