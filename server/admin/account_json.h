/* account_json.h - an account in JSON, both ways (account_json.c): what
 * /api/accounts shows, and the settings a request or the database gives.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ACCOUNT_JSON_H
#define EMG_ACCOUNT_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "account.h"
#include "config.h"

/* The first field refused, and why. */
struct account_json_problem {
  char key[64];
  char why[256];
};

/* One account as the API shows it (never its password or hash). */
json_t *account_json_view(const struct account_view *v);

/* The fields of body applied to a (creating: "name" may be given); its
 * password, when given, hashed. False with the first problem in p. */
bool account_json_apply(struct config_account *a, json_t *body, bool creating, struct account_json_problem *p);

/* An account from the database's settings (as POST takes them): false
 * with the field and the reason in why. */
bool account_json_parse(json_t *body, struct config_account *a, char *why, size_t why_len);

/* What the database keeps of a: its settings, with the password hash and
 * without credit. */
json_t *account_json_settings(const struct config_account *a);

#endif
