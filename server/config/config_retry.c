/* config_retry.c - a client connector's retry group: how often a refused
 * submit is sent again, how long it waits, and what each kind of refusal
 * does (retry here, reroute to another member of the route's group, fail).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <libconfig.h>
#include <stdio.h>
#include "config_internal.h"

_Static_assert(sizeof(enum config_retry_action) == sizeof(int), "enum stored as int");

static const struct name_value retry_actions[] = {
  { "retry", CONFIG_RETRY_RETRY }, { "reroute", CONFIG_RETRY_REROUTE }, { "fail", CONFIG_RETRY_FAIL },
  { NULL, 0 },
};

#define TARGET struct config_retry_error
static const struct key retry_error_keys[] = {
  { UINT_KEY("code", code, 0, 0xFFFFFFFFLL, 0), .required = ALWAYS },
  { ENUM_KEY("action", action, retry_actions, CONFIG_RETRY_RETRY), .required = ALWAYS },
};
#undef TARGET
static const struct section retry_error_section = { SECTION(retry_error_keys) };

static long long backoff_bound(const void *base)
{
  return ((const struct config_retry *)base)->backoff_max_ms;
}

/* A code given twice would leave one of its actions unused. */
static void check_retry(struct load *ld, const config_setting_t *grp, void *base, const char *path)
{
  const struct config_retry *r = base;
  const config_setting_t *list = config_setting_get_member(grp, "errors");
  char list_path[KEY_PATH_LEN], p[KEY_PATH_LEN];
  join_path(list_path, path, "errors");
  for (unsigned i = 0; i < r->n_errors; i++)
    for (unsigned j = 0; j < i; j++)
      if (r->errors[i].code == r->errors[j].code) {
        elem_path(p, list_path, i);
        report(ld, list ? config_setting_get_elem(list, i) : grp, p, "code %u (0x%x) is given twice",
               r->errors[i].code, r->errors[i].code);
      }
}

#define TARGET struct config_retry
static const struct key retry_keys[] = {
  { UINT_KEY("attempts", attempts, 0, 1000000, 0) },
  /* backoff_max first: it bounds backoff_first. */
  { UINT_KEY("backoff_max", backoff_max_ms, 1, 3600000, 10000) },
  { UINT_KEY("backoff_first", backoff_first_ms, 1, 3600000, 100), .bound = backoff_bound,
    .bound_why = "(not above backoff_max)" },
  { DOUBLE_KEY("backoff_factor", backoff_factor, 1, 100, 2) },
  { ENUM_KEY("temporary", temporary, retry_actions, CONFIG_RETRY_RETRY) },
  { ENUM_KEY("permanent", permanent, retry_actions, CONFIG_RETRY_FAIL) },
  { LIST_KEY("errors", errors, n_errors, retry_error_section, 1, CONFIG_RETRY_ERRORS_MAX) },
};
#undef TARGET
const struct section retry_section = { SECTION(retry_keys), .check = check_retry };
