/* account.h - the accounts at run time: who may log in where, from which
 * address, with how many sessions at once, how fast and how much; the
 * refusals counted by reason; and the accounts changed while emgd runs.
 *
 * Each account has a slot, fixed for its life (general.max_accounts of
 * them): connectors keep per-account queues by slot. Built from the
 * configuration's accounts (config_accounts.c); changed by accounts_put
 * and accounts_remove. Every function may be called from any thread;
 * changes must come one at a time (the caller serialises them). What a
 * function returns is the caller's (copied, never a pointer into the
 * accounts), valid after any change; a slot number stays the account's
 * until a minute after its removal at least (accounts_remove).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ACCOUNT_H
#define EMG_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "proto.h"
#include "journal.h"

/* Why a login was refused; ACCOUNT_OK when it was not. */
enum account_refusal {
  ACCOUNT_OK,
  ACCOUNT_UNKNOWN,         /* no such account, or not one of this connector */
  ACCOUNT_PASSWORD,        /* wrong password */
  ACCOUNT_CERTIFICATE,     /* no client certificate, or not the one of the account's tls_subject */
  ACCOUNT_DISABLED,
  ACCOUNT_EXPIRED,
  ACCOUNT_ADDRESS,         /* the source address is not in allow_ip */
  ACCOUNT_MAX_BINDS,       /* max_binds sessions already */
  ACCOUNT_NO_INSTANCE,     /* every instance of the connector serves a session */
  ACCOUNT_REFUSALS
};

struct accounts;

/* NULL with err filled (an allow_ip the checks let through but the
 * parser does not take, more accounts than max_accounts, no memory). */
struct accounts *accounts_create(const struct config *cfg, char *err, size_t err_len);
void accounts_destroy(struct accounts *a);

/* Slots in all (general.max_accounts), and the slots ever used: loops over
 * accounts stop there. */
unsigned accounts_capacity(const struct accounts *a);
unsigned accounts_used(const struct accounts *a);

/* A login as user with password from peer ("HOST:PORT") on server
 * connector index of cfg, over a connection whose verified client
 * certificate has the subject tls_subject (NULL: none): ACCOUNT_OK with
 * *slot the account's, or why not (counted). A bind that is to hold a
 * session takes one of the account's max_binds (bind true): give it back
 * with accounts_unbind when the session ends. */
enum account_refusal accounts_login(struct accounts *a, unsigned connector, const char *peer, const char *user,
                                    const char *password, const char *tls_subject, bool bind, int *slot);
void accounts_unbind(struct accounts *a, int slot);

/* Whether a session of slot's account from peer on connector may go on
 * after a change: the account still exists, is enabled and not expired, and
 * may use that connector from that address. */
bool accounts_session_allowed(struct accounts *a, int slot, unsigned connector, const char *peer,
                              enum account_refusal *why);

/* The slot of the account named name, or -1 (a hash lookup: HTTP finds
 * an account this way for every message). */
int accounts_find(const struct accounts *a, const char *name);

/* The name of slot's account into name; false when the slot is empty. */
bool accounts_name(const struct accounts *a, unsigned slot, char name[MSG_USER_LEN]);

/* Whether slot's account may bind or submit through server connector
 * connector; the only account that may, or -1 (none, or several). */
bool accounts_uses(const struct accounts *a, int slot, unsigned connector);
int accounts_sole(const struct accounts *a, unsigned connector);

/* A submit of slot's account at now_ns (CLOCK_MONOTONIC): PROTO_OK, or
 * PROTO_E_THROTTLED when it is past its max_rate (all its sessions share
 * one budget), or PROTO_E_SOURCE when its source address is not among its
 * senders. A submit without a source gets the account's default_sender. */
enum proto_status accounts_admit(struct accounts *a, int slot, struct msg *m, uint64_t now_ns);

/* After a PROTO_E_THROTTLED of accounts_admit: nanoseconds from now_ns
 * until slot's budget takes one more submit (0: it does now). */
uint64_t accounts_rate_wait_ns(struct accounts *a, int slot, uint64_t now_ns);

/* Credit: parts message parts of slot's account, taken all or none.
 * PROTO_OK with *epoch the account's credit epoch (0 when it has no credit
 * limit), or PROTO_E_CREDIT when fewer are left. Parts refused later by
 * the gateway itself are given back (by the account's name: the slot may
 * have changed hands since). */
enum proto_status accounts_credit_take(struct accounts *a, int slot, unsigned parts, uint32_t *epoch);
void accounts_credit_give_back(struct accounts *a, const char *name, unsigned parts);

/* ---- credit kept across crashes (account_credit.c) ---- */

/* Appends through emit a CREDIT record of every account with a credit
 * limit (only those whose credit was given back or changed since the last
 * one, when dirty_only) and moves each one's epoch on. How many. */
unsigned accounts_credit_snapshot(struct accounts *a, bool dirty_only,
                                  void (*emit)(void *ctx, const struct spool_record *rec), void *ctx);
/* ---- credit shared through the database (account_credit.c) ---- */

/* A snapshot's figure set for an account whose credit the database keeps;
 * its figure left is then the parts not yet pushed. */
#define CREDIT_SHARED (-1)

/* The parts slot's shared account took since its last push, and the epoch
 * they are tagged up to (moved on): false when there is nothing to push.
 * The caller pushes them, or gives them back with accounts_credit_unpush
 * when the push failed. */
bool accounts_credit_push(struct accounts *a, unsigned slot, char name[MSG_USER_LEN], int64_t *parts,
                          uint32_t *epoch);
void accounts_credit_unpush(struct accounts *a, unsigned slot, int64_t parts);
/* push_due(ctx) is called (from a submitting thread, under a credit lock:
 * quick, no accounts_* call) when a shared account has taken half its
 * batch since its last push. Set before any submit. */
void accounts_on_push_due(struct accounts *a, void (*push_due)(void *ctx), void *ctx);
/* The database's figure for slot's shared account (limited false: no
 * limit) after a push, and the last epoch it records this node pushed
 * (0: as it was): what is left here is the figure less what was taken
 * since. */
void accounts_credit_shared(struct accounts *a, unsigned slot, bool limited, int64_t credit,
                            uint32_t pushed_epoch);

/* Counts every change of any account's credit (parts taken included). */
uint64_t accounts_credit_moves(const struct accounts *a);

/* Replay, before any submit: each CREDIT record, each message part tagged
 * with a credit epoch (every message the journal still holds, finished or
 * not, once), then done: what is left is worked out. How many accounts'
 * credit came from the journal. */
void accounts_credit_replay_snapshot(struct accounts *a, const char *name, int64_t set, int64_t left,
                                     uint32_t epoch);
void accounts_credit_replay_part(struct accounts *a, const char *name, uint32_t epoch);
unsigned accounts_credit_replay_done(struct accounts *a);   /* again: the same count */

/* What the admin API shows of an account. */
struct account_view {
  struct config_account cfg;
  bool exists;
  bool shared;                     /* its credit is kept in the database */
  uint64_t binds;                  /* sessions now */
  int64_t credit_left;             /* CONFIG_CREDIT_UNLIMITED as int64 when there is no limit */
  double rate_now;                 /* messages a second over the last second */
  uint64_t submitted, refused_rate, refused_sender, refused_credit;
  uint64_t delivered, undelivered; /* final receipts given to its sessions */
};
/* Samples each account's submits for rate_now, and frees the versions and
 * name indexes changes replaced that no thread can still be reading:
 * called every second. */
void accounts_tick(struct accounts *a, uint64_t now_ns);
/* Versions and name indexes replaced and not freed yet: a thread was
 * inside one of the functions above when they were replaced (or no tick
 * or change came since). For the status page and tests; one that stays up
 * means a thread is stuck inside. */
size_t accounts_pending(const struct accounts *a);
/* false when slot holds no account. */
bool accounts_view(const struct accounts *a, unsigned slot, struct account_view *out);

/* ---- changes ---- */

enum account_change {
  ACCOUNT_CHANGED,
  ACCOUNT_E_INVALID,       /* err says which field and why */
  ACCOUNT_E_FULL,          /* max_accounts in use */
  ACCOUNT_E_NO_MEMORY
};

/* Adds ac, or replaces the account of its name: new binds and submits see
 * it at once. An account that was there keeps its slot, its sessions'
 * count and its rate budget; its credit is set anew only when ac's credit
 * differs from the one it had. *slot: the account's. */
enum account_change accounts_put(struct accounts *a, const struct config_account *ac, int *slot, char *err,
                                 size_t err_len);
/* Removes the account named name; its slot is used again only once its
 * sessions are gone and a minute has passed (a thread may still hold the
 * slot's number from a moment before: an HTTP request between its login
 * and its submit). The slot it had, or -1. */
int accounts_remove(struct accounts *a, const char *name);

/* Credit of slot's account: add (delta, add true) or set it; the value
 * left after. PROTO_E_CREDIT-free: false when slot holds no account. A
 * limit is set on an account without one by set (or add from 0). */
bool accounts_credit_change(struct accounts *a, int slot, bool add, int64_t value, int64_t *left);
/* Removes slot's credit limit. */
void accounts_credit_unlimit(struct accounts *a, int slot);

/* Counts a final receipt on its way to account name's sessions (delivered,
 * or not: failed, expired, deleted...). Any thread; unknown names are
 * not counted. */
void accounts_count_receipt(struct accounts *a, const char *name, bool delivered);

/* ---- refusals ---- */

/* Counts a refusal the caller made itself (ACCOUNT_NO_INSTANCE). */
void accounts_count(struct accounts *a, enum account_refusal why);

/* Refusals since start for one reason. */
uint64_t accounts_refused(const struct accounts *a, enum account_refusal why);

/* "unknown account", "wrong password", ...: for logs; and the name used as
 * a key in /api/status and a label in /metrics ("unknown", "password", ...). */
const char *account_refusal_text(enum account_refusal why);
const char *account_refusal_key(enum account_refusal why);

/* What a bind refused for why answers. */
enum proto_status account_refusal_status(enum account_refusal why);

#endif
