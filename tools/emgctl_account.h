/* emgctl_account.h - emgctl's account command.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef EMGCTL_ACCOUNT_H
#define EMGCTL_ACCOUNT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The account options, as getopt_long's values. */
enum {
  ACCOUNT_OPT_PASSWORD = 1000,
  ACCOUNT_OPT_CONNECTOR,
  ACCOUNT_OPT_ALLOW_IP,
  ACCOUNT_OPT_MAX_BINDS,
  ACCOUNT_OPT_MAX_RATE,
  ACCOUNT_OPT_CREDIT,
  ACCOUNT_OPT_SENDER,
  ACCOUNT_OPT_DEFAULT_SENDER,
  ACCOUNT_OPT_EXPIRES,
  ACCOUNT_OPT_TLS_SUBJECT,
};

/* Adds one option's value to body (the fields of an account). 0, or -1
 * having said why on stderr. */
int emgctl_account_option(int option, const char *value, json_t *body);

/* The request of `account VERB NAME` with the options in body: its path,
 * method and JSON text (*text, to free; NULL when none). 0, or -1 having
 * said why on stderr. */
int emgctl_account_request(const char *verb, const char *escaped_name, const char *raw_name, json_t *body,
                           char *path, size_t path_len, const char **method, char **text);

/* The answer, for people. */
void emgctl_account_print(json_t *j);

#endif
