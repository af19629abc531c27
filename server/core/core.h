/* core.h - the gateway's shared state and the message path between
 * connectors: admission against the queue limits, ids, routing, the DLR
 * table, and the counters the status shows.
 *
 * One struct core per process, passed to every module (no globals). Every
 * field is set up before the connector threads start and is immutable or
 * atomic afterwards.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CORE_H
#define EMG_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "log.h"
#include "logins.h"
#include "config.h"
#include "db.h"
#include "tables.h"
#include "routing.h"
#include "journal.h"

struct connector;
struct core;


/* How a receipt resolved away from the connectors' threads (by the cluster
 * thread, through the database) reaches the origin of its message, without
 * that code knowing the connectors: connector_create puts the connectors'
 * functions here, before any thread starts. */
struct core_origin {
  /* Queues (and journals) r for the origin account of info as a local
   * receipt would be; via: the connector it came through, or -1. 0, or -1
   * when the account is not here. Any thread. */
  int (*deliver_receipt)(struct core *core, const struct dlr_info *info, const struct msg_receipt *r,
                         int via);
  /* Whether a session of account user is bound to connector c now. */
  bool (*user_bound)(struct connector *c, const char *user);
};

/* The console's history: 10 minutes at 1 s, 24 hours at 10 s. */
#define CORE_SERIES_FINE 600
#define CORE_SERIES_STEP 10
#define CORE_SERIES_COARSE 8640

/* Totals once a second for the last minute, for rates over 1, 10 and 60 s. */
#define CORE_RATE_SAMPLES 61
struct core_rates {
  pthread_mutex_t lock;
  uint64_t received[CORE_RATE_SAMPLES];
  uint64_t sent[CORE_RATE_SAMPLES];
  unsigned head;                      /* index of the newest sample */
  unsigned filled;
};

/* Why a message was refused on its way in (connector_accept_message). The
 * core's totals and each connector count them; every view (emgctl, the
 * status line, /metrics, the console) names them by core_refusal_name. */
enum core_refusal {
  CORE_REFUSED_RATE,                  /* the account's max_rate */
  CORE_REFUSED_ACCOUNT_LIMIT,         /* the account's other limits: a sender it may not use, removed */
  CORE_REFUSED_CREDIT,                /* the account's credit used up (or its batch not pushed yet) */
  CORE_REFUSED_QUEUE_FULL,            /* max_total_queue reached, or the connector stopping */
  CORE_REFUSED_CONNECTOR_QUEUE_FULL,  /* the target connector's max_queue reached */
  CORE_REFUSED_NO_ROUTE,
  CORE_REFUSED_PLUGIN,                /* refused by a plugin (or its failure, with on_error refuse) */
  CORE_REFUSED_TOO_LONG,              /* more parts than a message may have */
  CORE_REFUSED_JOURNAL,               /* the journal could not write (disk full) */
  CORE_REFUSED_OTHER,                 /* no reference could be handed out, out of memory */
  CORE_REFUSALS
};

struct core_stats {
  _Atomic uint64_t received;          /* submits accepted from clients */
  _Atomic uint64_t slowed;            /* acks held back by the soft limit */
  _Atomic uint64_t sent;              /* accepted by an SMSC */
  _Atomic uint64_t failed;            /* refused for good by an SMSC */
  _Atomic uint64_t retried;           /* sent again after a temporary failure or a lost connection */
  _Atomic uint64_t rerouted;          /* moved from one connector's queue to another's */
  _Atomic uint64_t receipts_in;       /* receipts from SMSCs */
  _Atomic uint64_t delivered;         /* of those, matched to a message and saying DELIVERED */
  _Atomic uint64_t receipts_unmatched;
  _Atomic uint64_t receipts_out;      /* receipts delivered to clients */
  _Atomic uint64_t mo_in;             /* MO messages from SMSCs */
  _Atomic uint64_t expired;           /* validity passed before it could be sent */
  _Atomic uint64_t sessions_refused;  /* connections beyond a server connector's instances */
  _Atomic uint64_t binds_refused;     /* unknown account or wrong password */
  _Atomic uint64_t logins_blocked;    /* refused unread: their address failed too often (auth_guard) */
  _Atomic uint64_t admin_logins_blocked; /* the same for the admin API, which keeps its own guard */
  _Atomic uint64_t refused[CORE_REFUSALS]; /* messages refused on their way in, by enum core_refusal */
  _Atomic uint64_t reloads, reloads_refused;
};

struct core {
  const struct config *cfg;
  /* The router and the plugin host are swapped whole on reload; a thread
   * uses either only between core_enter and core_leave, and the one
   * swapped out is freed once no thread that could hold it is inside. */
  struct grace *grace;
  _Atomic(struct router *) router;
  _Atomic(struct plugin_host *) plugins; /* NULL = none */
  struct dlrtab *dlr;
  struct history *history;            /* recent events of each message, for lookups */
  struct series_set *series;          /* the counters' recent past, for the console; NULL = none */
  struct access_log *access_log;      /* a line per message in its final state; NULL = none */
  struct schedule *schedule;          /* messages held until their deferred time */
  struct mo_join *mo_join;            /* parts of long MOs waiting for each other; NULL = not joined */
  struct receipt_join *receipt_join;  /* long MTs answered by one receipt; NULL = no connector combines */
  struct auth_guard *auth_guard;      /* failed logins per source address */
  struct accounts *accounts;          /* who may log in where (account.h) */
  struct ids ids;
  struct connector **connectors;
  unsigned n_connectors;
  _Atomic uint64_t in_flight;         /* accepted, not yet sent or failed */
  _Atomic uint64_t (*connector_refused)[CORE_REFUSALS]; /* per connector (index), as stats.refused */
  unsigned n_connector_refused;
  _Atomic bool stopping;
  struct core_stats stats;
  struct core_rates rates;
  struct spool *spool;                /* persist on: the journal; NULL in memory */
  struct db_log *db_log;              /* the message log in PostgreSQL; NULL without one */
  struct cluster *cluster;            /* with a database: ids, nodes, receipts between nodes */
  const struct core_origin *origin;   /* the connectors' functions for the cluster thread */
  int64_t started;                    /* Unix seconds */
  int64_t scts_floor;                 /* UCP SCTS are never below this (Unix s): see core_set_scts_floor */
  pthread_mutex_t scts_note_lock;     /* serialises the notes of scts_noted */
  _Atomic int64_t scts_noted;         /* persist on: no SCTS handed out is past this (noted durably); 0: not noted */
  _Atomic int64_t scts_handed;        /* the latest SCTS second handed out */
  struct log_category *log;
};

enum core_admit {
  CORE_ADMIT_OK,
  CORE_ADMIT_SLOW,                    /* above max_total_queue_soft: hold the ack 100 ms */
  CORE_ADMIT_FULL                     /* at max_total_queue: refuse */
};

/* Sets up the core for cfg (router, DLR table, ids); connectors are added
 * by connector_create. Returns 0 or -1 (out of memory). */
int core_init(struct core *c, const struct config *cfg);
void core_destroy(struct core *c);

/* persist on: appends rec to the journal. Returns its ticket, 1 when
 * persist is off (nothing to wait for), 0 when the journal refuses. */
uint64_t core_journal(struct core *c, const struct spool_record *rec);

/* Waits (up to timeout_ms) until everything journaled so far is durable.
 * 0, or -1 on time-out or as soon as the journal cannot write (disk full).
 * 0 at once without a journal. */
int core_journal_settle(struct core *c, unsigned timeout_ms);

/* The DLR table's drop handler (arg: the core). An entry dropped before its
 * final receipt (the table was full, the SMSC gave its id again, or it
 * waited dlr_ttl) leaves a message no receipt can reach any more: the
 * message log and the history get a receipt in state UNKNOWN, and the
 * journal lets go of it (a FINISHED record). Else its records would stay
 * live for good: kept on disk, copied by every compaction, and put back
 * into the DLR table at every restart. */
void core_dlr_dropped(void *core, const struct dlr_dropped *dropped, size_t n, enum dlr_drop why);

/* Takes this second's sample of the totals (the main loop calls it each second). */
void core_sample_rates(struct core *c);

/* Messages per second received and sent over the last `seconds` (1..60). */
void core_rates(struct core *c, unsigned seconds, double *received, double *sent);

/* Whether one more message may come in now. Unless FULL, the message has
 * taken its place in in_flight: the caller gives it back (atomic_fetch_sub)
 * if it refuses the message after all. */
enum core_admit core_admit(struct core *c);

/* The name of a refusal reason: "rate", "account_limit", "credit",
 * "queue_full", "connector_queue_full", "no_route", "plugin", "too_long",
 * "journal", "other" (JSON keys, metric labels, the status line). */
const char *core_refusal_name(enum core_refusal why);

/* Counts a message refused for why, in the totals and for the connector of
 * index connector (-1: none, the totals only). Any thread. */
void core_refused(struct core *c, int connector, enum core_refusal why);

/* The refusals of connector (-1: the totals) by reason into out; their sum
 * is returned. */
uint64_t core_refusals(const struct core *c, int connector, uint64_t out[CORE_REFUSALS]);

/* Whether peer's logins are refused unheard: its address failed too often
 * (auth_guard); each such refusal is counted as logins_blocked. */
bool core_login_blocked(struct core *c, const char *peer);

/* Around every use of c->router and c->plugins, in any thread: what was
 * loaded between them stays valid (and a plugin loaded) until the leave,
 * whatever a reload swaps meanwhile. Cheap (a store and a fence), no lock;
 * they nest. */
void core_enter(struct core *c);
void core_leave(struct core *c);

/* Replaces the router (a reload); the old one is freed once no thread
 * that may use it is inside core_enter. */
void core_swap_router(struct core *c, struct router *r);

/* Puts plugin host h in place (start-up, reload); the old one is unloaded
 * once no thread that may be in one of its hooks is inside core_enter. */
void core_swap_plugins(struct core *c, struct plugin_host *h);

/* From the housekeeping tick: frees the routers and plugin hosts no
 * thread can use any more. How many wait for that, in *pending. */
void core_reclaim(struct core *c, size_t *pending);

/* The message log: one event, with the connector names filled in from
 * their indexes (origin from the message, target given; -1 = none). */
void core_log_event(struct core *c, enum db_log_kind kind, const struct msg *m, int target,
                    const char *smsc_id, uint8_t state, uint16_t error);

/* The message log: a receipt for message msg_id (and, a final one, the
 * access log: info says whose message it was, via the connector it went
 * out on; NULL and -1 when not known). */
void core_log_receipt(struct core *c, uint64_t msg_id, const struct dlr_info *info, int via,
                      const struct msg_receipt *r);

/* (AdC, SCTS) must stay unique across restarts: a new process stamps UCP
 * references from a second past anything the previous one can have handed
 * out. That is the ceiling it noted (previous_ceiling, below), when it did.
 * A process of an earlier version noted no ceiling: it stamped from the
 * later of its clock, which was no later than its last journal write
 * (previous_write, 0 when unknown; a margin covers clock steps and file
 * times), and its own floor (previous_floor, 0 when unknown), plus what its
 * allocator ran ahead, assumed to be at most CORE_SCTS_RUNAHEAD_S. */
#define CORE_SCTS_RESTART_MARGIN_S 3
#define CORE_SCTS_RUNAHEAD_S 5
void core_set_scts_floor(struct core *c, int64_t previous_write, int64_t previous_floor,
                         int64_t previous_ceiling);

/* The noted second bounds every SCTS this process hands out, however far
 * its allocator runs ahead of the clock (a recipient that gets many
 * messages in one second, a long message's parts): a stamp past it is
 * noted first (spool_note_scts_ceiling), the next process starts past it.
 * A note covers CORE_SCTS_NOTE_STEP_S past the stamp that needed it, and
 * the housekeeping tick notes ahead once stamps come within
 * CORE_SCTS_NOTE_LEAD_S of it, so that a submit seldom waits for one. */
#define CORE_SCTS_NOTE_STEP_S 5
#define CORE_SCTS_NOTE_LEAD_S 3

/* Notes durably that no stamp will pass upto, unless a note already says
 * more; at start, with the floor, it begins the notes. 0, or -1 (logged)
 * when the note cannot be written. */
int core_scts_note(struct core *c, int64_t upto);

/* A UCP server connector is about to hand out SCTS `second`: 0, or -1 when
 * it is past the note and a new note cannot be written (the stamp must not
 * be used). Without a journal always 0. */
int core_scts_handing(struct core *c, int64_t second);

/* The housekeeping tick: notes ahead of stamps that come close to the note. */
void core_scts_note_ahead(struct core *c);

/* The connector of index i. */
static inline struct connector *core_connector(struct core *c, unsigned i)
{
  return c->connectors[i];
}

#endif
