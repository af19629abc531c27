/* config_checks.c - configuration text in the unit suites (config_checks.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>
#include "config_checks.h"
#include "testutil.h"

void config_check_refused(const char *text, const char *name, struct config_errors *e)
{
  struct config *c = config_load_string(text, name, e);
  CU_ASSERT_PTR_NULL(c);
  config_free(c);
}

bool config_check_has_error(const struct config_errors *e, const char *name, unsigned line,
                            const char *key, const char *what)
{
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%s:%u: %s: ", name, line, key);
  for (unsigned i = 0; i < e->count; i++)
    if (strncmp(e->lines[i], prefix, strlen(prefix)) == 0 && strstr(e->lines[i], what))
      return true;
  return false;
}

struct config *config_check_loaded(const char *text, const char *name)
{
  struct config_errors e;
  struct config *c = config_load_string(text, name, &e);
  for (unsigned i = 0; i < e.count; i++)
    fprintf(stderr, "%s\n", e.lines[i]);
  config_errors_free(&e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  return c;
}
