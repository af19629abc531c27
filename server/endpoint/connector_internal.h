/* connector_internal.h - the connector and its instances as the files of
 * server/endpoint/ share them, the endpoint interface each kind of
 * connector implements, and the functions that cross between those files.
 * Only they include it; everyone else uses connector.h.
 *
 * Shared by every kind: connector.c (a connector's life, its instances'
 * threads, staging and what the admin API sees), connector_submit.c
 * (messages in, through server/path/, and their answers held or sent),
 * connector_send.c (what may go out, and the peer's answer to it),
 * connector_receipt.c (receipts from SMSCs and to origins),
 * connector_hold.c, connector_journal.c, connector_about.c (queries passed
 * on), connector_tls.c.
 *
 * The kinds, each one struct endpoint_ops: endpoint_session.c (SMPP, UCP
 * and CIMD2 sessions, as server or client; connector_accept.c is the
 * server's listener), endpoint_http_server.c, endpoint_http_client.c.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CONNECTOR_INTERNAL_H
#define EMG_CONNECTOR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "connector.h"
#include "http_server.h"
#include "session.h"

/* A client connector's TLS server name, at most (config_tls.server_name). */
#define CONNECTOR_TLS_NAME_LEN 256

/* Items taken from a queue at once: bounded so one instance cannot hog a
 * queue that others share. */
#define PUMP_BATCH 256
/* Distinct target queues one instance stages to in one loop iteration. */
#define MAX_STAGES 16

enum instance_phase {
  PHASE_RUN,
  PHASE_STOP_SESSION,              /* finish in-flight work, unbind, close */
  PHASE_EXIT                       /* leave the loop */
};

/* Where the answer to a request goes, as the instance's endpoint answers
 * it (endpoint_ops.answer): a response on its session (ref, raw_status,
 * op), the completion of a message of an HTTP request, or nowhere (none: a
 * message the gateway makes itself, an application's reply to an MO).
 * route_to, when set, names the SMSC connector the message must leave on
 * (Kannel's smsc parameter, a reply on the MO's own connector) instead of
 * the routes'. */
struct reply {
  uint32_t ref;
  uint32_t raw_status;
  enum proto_op op;
  bool none;
  struct http_server_completion completion;
  const char *route_to;
};

/* An ack held back by the soft limit or until the journal has its records. */
struct held_ack {
  uint64_t due_ms;
  uint64_t received_ns;            /* monotonic: when the request came (its ack latency) */
  struct reply reply;
  uint64_t ticket;                 /* persist on: the journal ticket that must be durable first */
  bool refused;                    /* the journal refused those records: answered with an error */
  char msgid[MSG_ID_LEN];
};

/* Held acks in arrival order: a ring that grows, so that holding an ack
 * (every submit with persist on) costs no allocation. */
struct held_acks {
  struct held_ack *slots;
  size_t cap, head, count;         /* cap a power of two */
};

struct stage {
  struct queue *queue;
  struct qlist list;
};

/* A client's query_sm, cancel_sm or replace_sm about a message already at
 * an SMPP SMSC, passed on to it (connector_about.c), and its answer on the
 * way back to the client's session. */
struct about_request {
  struct about_request *next;      /* in the SMSC connector's list, then the origin instance's */
  struct qitem *item;              /* the QITEM_ABOUT that carries it through the window */
  enum proto_op op;                /* QUERY, CANCEL, REPLACE */
  char smsc_id[MSG_ID_LEN];        /* the message at the SMSC */
  char client_id[MSG_ID_LEN];      /* ... as the client knows it */
  struct msg_addr src, dst;
  int64_t validity, deferred;      /* REPLACE */
  uint8_t dlr_mask;
  uint8_t data_len;
  uint8_t data[255];
  /* where the answer goes: the client's session, by instance and serial */
  struct connector *origin;
  unsigned origin_instance;
  uint32_t origin_session;
  uint32_t ref, raw_status;
  uint64_t deadline_ms;            /* monotonic: answered as failed when not sent by then */
  uint64_t msg_id;                 /* a lookup in the message log: the message, */
  char user[MSG_USER_LEN];         /* ... and the account that asks */
  /* the answer */
  enum proto_status status;
  struct msg_receipt answer;       /* QUERY: state, err, done_time */
};

struct early_receipt;
struct endpoint_ops;
struct http_server_loop;
struct http_client;
struct http_callback;
struct scts_alloc;
struct unbound;

/* Counts that one thread writes and others read: relaxed atomics, bumped
 * by count_one without a locked instruction. */
struct instance_counts {
  _Atomic uint64_t submits_in, submits_out, receipts_in, receipts_out, refused, errors;
};

static inline void count_one(_Atomic uint64_t *n)
{
  atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* An instance: a thread with its own loop. The fields of every kind come
 * first; then those of one kind of endpoint alone, which only its file
 * (and the helpers it calls) touch. */
struct instance {
  struct connector *conn;
  unsigned index;
  pthread_t thread;
  bool started;
  struct evloop *loop;
  struct log_category *log;
  struct id_block ids;
  _Atomic int phase;
  _Atomic bool ready;              /* could send more from its queue: pushes may wake it */
  _Atomic bool bound;
  /* pushes gathered in this iteration, flushed once at its end */
  struct stage stages[MAX_STAGES];
  unsigned n_stages;
  bool flush_pending;
  struct held_acks held;
  _Atomic uint64_t held_ticket;    /* ticket the oldest held ack waits for; 0 = none waits */
  /* persist on: the records of this iteration, appended to the journal at
   * its end (or before anything they concern is handed to another thread) */
  struct spool_batch journal;
  size_t held_new;                 /* acks held since the batch was last appended */
  uint8_t concat_ref;              /* reference of the next message this instance splits */
  /* sending to one peer: the back-off after its refusals */
  uint64_t backoff_ms;
  uint64_t paused_until_ms;        /* backing off until then */
  /* The message counts: written by the instance's thread alone, read by any
   * thread at any time, so that a view taken just after a client leaves
   * counts everything it sent. */
  struct instance_counts live;
  /* the rest of what connector_instance_info shows: counted in the
   * thread, published under the lock */
  struct connector_instance_info counted;
  uint64_t published_ms;
  pthread_mutex_t info_lock;
  struct connector_instance_info published;

  /* ---- session endpoints (endpoint_session.c) ---- */
  struct session *session;
  unsigned tls_generation;         /* client: the connector's TLS generation its session has */
  struct early_receipt *early_head, *early_tail; /* client: receipts before their DLR entry */
  unsigned early_count;
  /* server: a connection the listener handed over once its bind proved
   * the account: the socket, its unread input (the bind first), the account */
  pthread_mutex_t handoff_lock;
  int handoff_fd;
  char handoff_peer[64];
  uint8_t *handoff_input;
  size_t handoff_input_len;
  struct tls_conn *handoff_tls;      /* its TLS, or NULL */
  int handoff_user;
  _Atomic bool busy;               /* server: has (or is being handed) a connection */
  int user;                        /* server: slot of the bound account, -1 */
  int proven_user;                 /* the account the listener proved for the coming bind, -1 */
  int bind_held;                   /* the account whose max_binds this session holds one of, -1 */
  _Atomic bool account_changed;    /* accounts changed: is the bound one still allowed? */
  struct queue *waiting_on;        /* the account's queue whose waiter list holds this loop */
  uint32_t session_serial;         /* server: one more for each session it takes */
  struct about_request *about_answers; /* server: answers for its client, under conn->about_lock */
  _Atomic bool about_answered;     /* ... there are some: its thread looks without the lock */

  /* ---- the HTTP server endpoint (endpoint_http_server.c): the
   * connections this instance serves and its receipt callback sender ---- */
  struct http_server_loop *http_loop;
  struct http_callback *callbacks;
  uint64_t callback_failures_logged; /* tries_failed when last logged */
  uint64_t callback_log_next_ms;   /* ... and when it may log again */

  /* ---- the HTTP client endpoint (endpoint_http_client.c) ---- */
  struct http_client *http_client;
  struct log_every provider_log;   /* no answer, at most every 10 s */
};

/* A connector. As for its instances, the fields of every kind come first. */
struct connector {
  struct core *core;
  const struct config_connector *cfg;
  const struct endpoint_ops *ops;  /* its kind (endpoint_ops_of) */
  unsigned index;
  struct log_category *log;
  struct queue out;                /* sending to one peer: what waits for it */
  struct queue *user_queues;       /* serving accounts: one per account slot (accounts.h) */
  unsigned n_user_queues;
  struct instance *instances;
  unsigned n_instances;
  _Atomic bool paused;             /* by the operator: queues hold, nothing is sent */
  _Atomic bool accepting;          /* serving: takes new connections */
  /* TLS (connector_tls.c): what new connections begin with, under tls_lock */
  pthread_mutex_t tls_lock;
  struct tls_ctx *tls;             /* NULL = plain TCP */
  char tls_server_name[CONNECTOR_TLS_NAME_LEN]; /* connecting: "" = the host of connect */
  _Atomic unsigned tls_generation; /* one more at each reload */
  struct log_every tls_log;        /* failed handshakes, ten a second at most */

  /* ---- session endpoints (endpoint_session.c) ---- */
  struct session_config session_cfg;
  /* server: the listener (connector_accept.c) */
  int listen_fd;
  struct evloop *accept_loop;
  pthread_t accept_thread;
  bool accept_started;
  /* connections that have not bound, in the listener's loop */
  struct session_config unbound_cfg;
  struct unbound *unbound;         /* unbound_max slots */
  unsigned n_unbound;
  /* out of descriptors: accepting paused until then (the listener's loop ms;
   * 0 = accepting), and the pauses since it last accepted */
  uint64_t accept_paused_until;
  uint64_t accept_pauses;
  bool accept_warned;              /* the pause was logged: so is the end of it */
  struct log_every emfile_log;     /* the pause, at most every 10 s */
  struct log_every refusal_log;    /* "all instances are in use", at most every 10 s */
  struct log_every unbound_log;    /* connections closed for unbound_per_ip, likewise */
  struct log_every unbound_full_log; /* ... and for unbound_max */
  /* server, protocols whose ids are (AdC, SCTS) (proto_ops.msgid_scts):
   * unique across all sessions of the connector */
  pthread_mutex_t scts_lock;
  struct scts_alloc *scts;
  _Atomic uint32_t next_serial;
  /* queries, cancels and replaces (connector_about.c): on a client those to
   * pass on to its SMSC; on a server it guards the instances' answers */
  pthread_mutex_t about_lock;
  struct about_request *about_head, *about_tail;
  _Atomic unsigned about_waiting;  /* requests in that list: the pump looks without the lock */
  /* server with a database: the message log's worker, for messages the
   * history no longer holds (under about_lock) */
  pthread_cond_t lookup_cond;
  struct about_request *lookup_head, *lookup_tail;
  unsigned lookups;
  bool lookup_stop, lookup_started;
  pthread_t lookup_thread;

  /* ---- the HTTP server endpoint (endpoint_http_server.c) ---- */
  struct http_server *http_server;
};

/* How a kind of connector uses TLS. */
enum endpoint_tls {
  ENDPOINT_TLS_OWN,                /* builds its own from the configuration (HTTP client) */
  ENDPOINT_TLS_ACCEPTS,            /* the connector's context, on every connection it accepts */
  ENDPOINT_TLS_CONNECTS            /* ... on every connection it makes, renewed by a reload */
};

/* The endpoint interface: what one kind of connector is at the gateway's
 * edge. The code shared by every kind asks this, never the kind: a new kind
 * is a new table, not a branch in the shared files.
 *
 * What came in goes to the shared functions: a message to
 * connector_accept_message, a receipt from an SMSC to connector_receipt_in,
 * the peer's answer to what was sent to connector_response_in. */
struct endpoint_ops {
  const char *kind;                /* for logs and the documentation */
  /* Capabilities. */
  bool account_queues;             /* serves accounts: a queue per account, routes may name one;
                                      else it sends to one peer from the connector's out queue */
  bool smsc_session;               /* a session to an SMSC: its receipts are matched by the SMSC's
                                      ids, its MOs' parts joined, queries passed on to it */
  bool to_application;             /* what it sends goes to an application (a client of ours or an
                                      HTTP push): an MO's parts are joined before */
  enum endpoint_tls tls;
  const char *idle_state;          /* what an instance with no connection shows */
  /* start: before its instances' threads (a listening socket, an HTTP
   * server), and once they run (the listener's thread, the line that says
   * it started). NULL: nothing to do. 0, or -1 with err. */
  int (*start)(struct connector *c, char *err, size_t err_len);
  int (*started)(struct connector *c, char *err, size_t err_len);
  /* stop, first step: no new connections (NULL: it takes none). */
  void (*stop_accepting)(struct connector *c);
  /* An instance's thread, from its loop's start to its end. */
  void (*run)(struct instance *in);
  /* In the instance's thread, each wake: stopping (finish, unbind; keep
   * in->bound while it still has work), or running (NULL: nothing more). */
  void (*stop)(struct instance *in);
  void (*wake)(struct instance *in);
  /* Each tick of the instance's loop (NULL: nothing). */
  void (*tick)(struct instance *in);
  /* send: what its queues hold, as far as it can (connector_pump). */
  void (*send)(struct instance *in);
  /* answer: a request that came in (NULL: nobody to answer). */
  void (*answer)(struct instance *in, const struct reply *rp, enum proto_status status, const char *msgid);
  /* A submitter past its account's rate is not read for ms (NULL: cannot be held). */
  void (*hold_input)(struct instance *in, unsigned ms);
  /* The accounts changed: is the bound one still allowed? (NULL: nothing bound.) */
  void (*accounts_changed)(struct instance *in);
  /* What connector_instance_info shows of its connection: state, peer,
   * user, bind, window_used, reconnects, connected_since. */
  void (*describe)(struct instance *in, struct connector_instance_info *i);
  /* Frees what the kind holds, its threads ended (NULL: nothing). Also on
   * a connector_create that failed half-way. */
  void (*destroy)(struct connector *c);
};

extern const struct endpoint_ops endpoint_session_server, endpoint_session_client;
extern const struct endpoint_ops endpoint_http_server, endpoint_http_client;

/* The kind a connector's configuration makes. */
const struct endpoint_ops *endpoint_ops_of(const struct config_connector *cfg);

/* ---- connector.c ---- */

/* Counts one latency of us microseconds into l. */
void connector_latency_record(struct connector_latency *l, uint64_t us);

/* Notes an error of the instance: counted, and shown as its last error. */
void connector_instance_error(struct instance *in, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

/* Publishes what the instance counted for connector_instance_info: at
 * most every INFO_PUBLISH_MS, or at once when force is set. */
void connector_instance_publish(struct instance *in, bool force);

/* The end of this loop iteration will flush the instance's journal batch
 * and staged pushes (connector_flush_stages), once. */
void connector_schedule_flush(struct instance *in);

/* Sends what the instance's queues hold, as far as it can (its endpoint's send). */
void connector_pump(struct instance *in);

/* The end of an instance's thread, once its loop has stopped: what it
 * staged goes, its held acks are answered, receipts it waits on are given
 * up. */
void connector_instance_end(struct instance *in);

/* Appends the instance's journal batch; the acks held for it get its ticket. */
void connector_journal_flush(struct instance *in);

/* The end of a loop iteration (an evloop_defer callback, arg the
 * instance): the journal batch, then the staged pushes, then the acks. */
void connector_flush_stages(struct evloop *loop, void *arg);

/* Stages it for q: pushed at the end of the loop iteration. */
void connector_stage(struct instance *in, struct queue *q, struct qitem *it);

/* Puts it and the items after it (up to tail) back at the front of q. */
void connector_requeue_rest(struct queue *q, struct qitem *it, struct qitem *tail);

/* Puts it back at the front of q. */
void connector_requeue_front(struct queue *q, struct qitem *it);

/* Moves message it, refused by client connector c (why: the refusal), to
 * another member of its route's group that can take it now and has not
 * refused it; journaled, in its history, counted as rerouted. False when
 * there is none (it stays the caller's). */
bool connector_reroute(struct connector *c, struct instance *in, struct qitem *it, const char *why);

/* Journals rec: in is the instance whose thread this is, and the record
 * goes into its batch, after what the thread journaled before; NULL in any
 * other thread, and it goes at once. The ticket to wait for
 * (TICKET_IN_BATCH for a batched record; 1 with persist off), or 0 when
 * the journal refuses. */
uint64_t connector_journal(struct core *core, struct instance *in, const struct spool_record *rec);

/* connector_journal of a record that names a message (or receipt) id only. */
uint64_t connector_journal_msg_event(struct core *core, struct instance *in, enum spool_record_type type,
                                     uint64_t id, uint16_t target, const char *smsc_id);

/* A message held before its queue (scheduled, or a part waiting to be
 * joined) let go: back to connector target's queue, or dropped when it
 * takes it no more. in as for connector_journal. */
void connector_release_held(struct core *core, struct instance *in, unsigned target, struct qitem *it);

/* ---- connector_submit.c ---- */

/* Answers a request as the instance's endpoint does (nothing for a reply
 * to nobody), counting a refusal. */
void connector_reply_to(struct instance *in, const struct reply *rp, enum proto_status status,
                        const char *msgid);

/* Holds an ack for due_in_ms and, with persist on, until ticket is durable. */
void connector_hold_ack(struct instance *in, const struct reply *rp, const char *msgid,
                        unsigned due_in_ms, uint64_t ticket, uint64_t received_ns);

/* Sends the held acks that are due and durable (all of them when all is set). */
void connector_release_held_acks(struct instance *in, bool all);

/* The queue a message routed to out waits in (for a server connector,
 * account user's), or NULL when the account is not there. */
struct queue *connector_target_queue(struct connector *out, const char *user);

/* Takes a submit (or an MO) into the core and answers rp. account is the
 * submitting account's index in the configuration's accounts (its limits
 * apply: account.h), -1 for an MO. */
void connector_accept_message(struct instance *in, const struct msg *msg, const char *origin_user, int account,
                              const struct reply *rp);

/* ---- connector_send.c ---- */

/* Sends from the queue source names (NULL: nothing to send now) with
 * send_from, as far as room allows, then says whether a push should wake
 * the instance (endpoint_ops.send's common part). */
void connector_send_from(struct instance *in, struct queue *(*source)(struct instance *),
                         void (*send_from)(struct instance *, struct queue *),
                         unsigned (*room)(struct instance *));

/* Whether a message taken from a queue may go out now; if not, it has
 * failed and is gone. */
bool connector_may_send(struct instance *in, struct qitem *it);

/* Fails a message for good: its origin gets a receipt in state. Frees it. */
void connector_give_up_message(struct instance *in, struct qitem *it, uint8_t state, uint32_t code);
/* A part that took credit and failed by the gateway's own doing: the
 * credit goes back to its account. */
void connector_credit_give_back(struct core *core, const struct msg *m);

/* The answer to request it of ours: a session's response or an HTTP
 * provider's. */
void connector_response_in(struct instance *in, struct qitem *it, const struct proto_pdu *resp);

/* ---- connector_receipt.c ---- */

/* Stages a receipt for the origin of a message, if it wants it. The
 * journal ticket of its record (1 when nothing was journaled). */
uint64_t connector_receipt_to_origin(struct instance *in, const struct dlr_info *info,
                                     const struct msg_receipt *r);

/* A receipt from the SMSC (a deliver of the instance's session). */
void connector_receipt_in(struct instance *in, const struct proto_pdu *req);

/* Tries again the receipts that came before their DLR entry (all of them
 * once more when give_up is set: the instance stops). */
void connector_retry_early_receipts(struct instance *in, bool give_up);

/* ---- connector_about.c ---- */

/* A client's QUERY, CANCEL or REPLACE on a server connector's session. */
void connector_about_in(struct instance *in, const struct proto_pdu *req);

/* On a client connector's instance: sends the requests passed on to its
 * SMSC as far as the window goes (before its messages). */
void connector_about_pump(struct instance *in);

/* The SMSC's answer to request it (a QITEM_ABOUT), or NULL when none came:
 * it goes back to the client's instance. */
void connector_about_sent_back(struct instance *in, struct qitem *it, const struct proto_pdu *resp);

/* Requests passed on that no session took in time are answered as failed. */
void connector_about_expire(struct connector *c);

/* On a server connector's instance: the answers that came back for its client. */
void connector_about_answers(struct instance *in);

/* Frees what a connector still holds of requests passed on (at its end). */
void connector_about_free(struct connector *c);

/* An SMPP server connector with a database: starts and stops the worker
 * that looks older messages up in the message log. 0, or -1 with err. */
int connector_about_start(struct connector *c, char *err, size_t err_len);
void connector_about_stop(struct connector *c);

/* ---- endpoint_session.c ---- */

/* Sends resp, an answer to a request, on the instance's session (if it
 * has one), counting a refusal. */
void connector_answer(struct instance *in, const struct proto_pdu *resp);

/* Answers a request on the instance's session (if it has one). */
void connector_respond(struct instance *in, uint32_t ref, uint32_t raw_status, enum proto_op op,
                       enum proto_status status, const char *msgid);

/* ---- connector_accept.c ---- */

/* A server connector's listening socket, watched by its own loop. 0, or -1
 * with err filled. */
int connector_listen(struct connector *c, char *err, size_t err_len);

/* Starts the listener's thread. 0, or -1 with err filled. */
int connector_accept_start(struct connector *c, char *err, size_t err_len);

/* Frees what the listener holds (called once its thread has ended). */
void connector_accept_free(struct connector *c);

/* ---- connector_tls.c ---- */

/* From the configuration: the context (sessions) or HTTPS (HTTP server).
 * -1 with err when HTTPS cannot be set up. */
int connector_tls_init(struct connector *c, char *err, size_t err_len);
/* The context a new connection begins with (a reference), or NULL; and,
 * when server_name is given, the name a client sends and verifies. */
struct tls_ctx *connector_tls_current(struct connector *c, char server_name[CONNECTOR_TLS_NAME_LEN]);
/* On a client instance's thread: a reload's context for its next connect. */
void connector_tls_take(struct instance *in);
void connector_tls_free(struct connector *c);

#endif
