/* account_internal.h - the accounts' run-time state, shared by account.c
 * (logins, submits, changes) and account_credit.c (credit kept across
 * crashes).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ACCOUNT_INTERNAL_H
#define EMG_ACCOUNT_INTERNAL_H

#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "account.h"
#include "cidr.h"
#include "grace.h"

/* One version of an account's settings: never changed once published.
 * Read only inside a section of the accounts' grace domain (account.c). */
struct account_def {
  struct config_account cfg;
  struct cidr *allow;              /* cfg.n_allow_ip parsed */
  bool *uses;                      /* per connector: may bind or submit through it */
  uint64_t interval_ns, tolerance_ns; /* max_rate as a generic cell rate algorithm */
};

/* A slot: the account's current version and what changes with traffic.
 * max_rate is a generic cell rate algorithm: one atomic "theoretical
 * arrival time" per account, shared by every instance thread without a
 * lock. A submit is let through when it would not put that time more than
 * the tolerance ahead of now, and moves it one interval on. */
struct account_rt {
  _Atomic(struct account_def *) def; /* NULL: no account here */
  int64_t removed_at;              /* when its account was removed (monotonic s): see slot_free */
  _Atomic unsigned binds;
  _Atomic uint64_t tat_ns;         /* max_rate: when the budget is next free */
  _Atomic uint64_t submitted, refused_rate, refused_sender, refused_credit;
  _Atomic uint64_t delivered, undelivered;   /* final receipts its sessions were given */
  uint64_t rate_sample, rate_sampled_ns; /* accounts_tick's, on its thread */
  _Atomic double rate_now;
  /* The password last proven against the hash, as a keyed digest: a client
   * that reconnects (all its binds at once, after a restart) costs one
   * hashing, not one each. */
  pthread_mutex_t proven_lock;
  uint8_t proven[crypto_generichash_BYTES];
  int64_t proven_until;            /* seconds (CLOCK_MONOTONIC); 0 = none */
  /* Credit, under credit_lock: what is left, the value last set, and the
   * epoch parts taken now are tagged with (a snapshot moves it on). */
  pthread_mutex_t credit_lock;
  _Atomic bool limited_flag;       /* limited, read without the lock on every submit */
  bool limited;
  int64_t credit_left, credit_set;
  uint32_t credit_epoch;
  bool credit_dirty;               /* changed since the last snapshot */
  /* Credit kept in the database (an account of the database, shared by
   * the nodes): credit_set is the database's figure at the last push,
   * unpushed the parts taken here since (less those given back), and
   * credit_left the first less the second. */
  bool shared;
  int64_t unpushed;
  uint32_t pushed_epoch;           /* the database's record of the last epoch this node pushed */
};

/* Replay: the parts of one epoch. */
struct credit_tag {
  uint32_t epoch;
  uint64_t parts;
};

/* Replay: what the journal says of one account's credit. */
struct credit_replay {
  bool has_snapshot;
  int64_t set, left;
  uint32_t epoch, max_epoch;
  struct credit_tag *tags;
  size_t n_tags, cap_tags;
};

/* Names to slots: open addressing, slot + 1, 0 = empty. */
struct name_index {
  size_t mask;
  int slots[];
};

struct accounts {
  const struct config *cfg;        /* the connectors (fixed for the process's life) */
  unsigned n_connectors;
  struct account_rt *slots;        /* capacity */
  unsigned capacity;
  unsigned used;                   /* slots ever used (changes' thread) */
  _Atomic unsigned used_published; /* the same, for readers */
  _Atomic(struct name_index *) index;
  size_t index_cap;
  _Atomic int *sole;               /* per connector: its only account's slot, or -1 */
  struct grace *grace;             /* versions and indexes replaced: freed once no reader is inside */
  uint8_t digest_key[crypto_generichash_KEYBYTES]; /* random: the digests mean nothing elsewhere */
  _Atomic uint64_t refused[ACCOUNT_REFUSALS];
  _Atomic uint64_t credit_moves;   /* accounts_credit_moves */
  bool shared_mode;                /* accounts changed live live in the database */
  unsigned credit_batch;           /* shared: parts taken between two pushes, at most */
  void (*push_due)(void *ctx);     /* shared: half a batch taken, push now (accounts_on_push_due) */
  void *push_due_ctx;
  struct credit_replay *replay;    /* per slot, during start-up's replay */
  unsigned credit_restored;        /* accounts whose credit the replay set */
};

#endif
