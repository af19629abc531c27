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
 * The path knows no protocol, session or thread: what it needs of the
 * endpoint a message came through, and of the connectors it goes to, it
 * asks through struct path_edge. Unit tests drive it with an edge of their
 * own (tests/unit/test_path.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_PATH_H
#define EMG_PATH_H

#include <stdbool.h>
#include <stdint.h>
#include "core.h"
#include "msg.h"
#include "proto.h"

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

#endif
