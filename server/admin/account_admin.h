/* account_admin.h - accounts changed while emgd runs: /api/accounts and
 * a reload's accounts.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ACCOUNT_ADMIN_H
#define EMG_ACCOUNT_ADMIN_H

#include <jansson.h>
#include <stddef.h>
#include "account.h"
#include "core.h"
#include "config.h"

/* {"accounts": [...]}. */
json_t *account_admin_list(struct core *c);

/* A request to /api/accounts, rest being what follows that in the path
 * ("", "/NAME", "/NAME/credit"), with its body: the HTTP status, and the
 * answer in *answer (an object; {"error": "..."} when refused). */
unsigned account_admin_request(struct core *c, const char *method, const char *rest, const char *body,
                               size_t body_len, json_t **answer);

/* Each second: credit given back or changed since the last snapshot is
 * journaled (persist on); without a journal, credit that moved is written
 * to the accounts file at most every 10 s (a crash loses what moved since). */
void account_admin_tick(struct core *c);

/* The journal's hook (spool_options.credit_snapshot): every account's
 * credit, before the journal removes any record. ctx is the core. */
void account_admin_snapshot(void *ctx, void (*emit)(void *emit_ctx, const struct spool_record *rec),
                            void *emit_ctx);

/* A reload: the accounts of next (emgd.conf's and the accounts file's) put
 * in place of the running ones; sessions they shut out are unbound. Each
 * account that cannot be put in place stays as it was and is added to
 * report's refusals (the others still go in); what went in is one applied
 * item. */
void account_admin_reload(struct core *c, const struct config *next, struct reload_report *report);

#endif
