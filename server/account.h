/* account.h - the accounts at run time: who may log in where, from which
 * address, with how many sessions at once; the refusals counted by reason.
 *
 * Built from the configuration's accounts (config_accounts.c). Every
 * function may be called from any thread. */
#ifndef EMG_ACCOUNT_H
#define EMG_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "proto.h"

/* Why a login was refused; ACCOUNT_OK when it was not. */
enum account_refusal {
  ACCOUNT_OK,
  ACCOUNT_UNKNOWN,         /* no such account, or not one of this connector */
  ACCOUNT_PASSWORD,        /* wrong password */
  ACCOUNT_DISABLED,
  ACCOUNT_EXPIRED,
  ACCOUNT_ADDRESS,         /* the source address is not in allow_ip */
  ACCOUNT_MAX_BINDS,       /* max_binds sessions already */
  ACCOUNT_NO_INSTANCE,     /* every instance of the connector serves a session */
  ACCOUNT_REFUSALS
};

struct accounts;

/* NULL with err filled (an allow_ip the checks let through but the
 * parser does not take, or no memory). */
struct accounts *accounts_create(const struct config *cfg, char *err, size_t err_len);
void accounts_destroy(struct accounts *a);

/* A login as user with password from peer ("HOST:PORT") on server
 * connector index of cfg: ACCOUNT_OK with *user the account's index among
 * that connector's users, or why not (counted). A bind that is to hold a
 * session takes one of the account's max_binds (bind true): give it back
 * with accounts_unbind when the session ends. */
enum account_refusal accounts_login(struct accounts *a, unsigned connector, const char *peer, const char *user,
                                    const char *password, bool bind, int *user_index);
void accounts_unbind(struct accounts *a, unsigned connector, int user_index);

/* The index in the configuration's accounts of the one named name, or -1
 * (a hash lookup: HTTP finds an account this way for every message). */
int accounts_find(const struct accounts *a, const char *name);

/* A submit of account index at now_ns (CLOCK_MONOTONIC): PROTO_OK, or
 * PROTO_E_THROTTLED when it is past its max_rate (all its sessions share
 * one budget), or PROTO_E_SOURCE when its source address is not among its
 * senders. A submit without a source gets the account's default_sender. */
enum proto_status accounts_admit(struct accounts *a, int index, struct msg *m, uint64_t now_ns);

/* What the admin API shows of an account. */
struct account_view {
  const struct config_account *cfg;
  uint64_t binds;                  /* sessions now */
  uint64_t submitted, refused_rate, refused_sender;
};
unsigned accounts_count_all(const struct accounts *a);
void accounts_view(const struct accounts *a, unsigned index, struct account_view *out);

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
