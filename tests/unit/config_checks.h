/* config_checks.h - configuration text in the unit suites: refused with
 * the errors expected (config, router), or loaded for a fixture (path).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CONFIG_CHECKS_H
#define EMG_CONFIG_CHECKS_H

#include <stdbool.h>
#include "config.h"

/* Loads text as the file name and asserts that it is refused; the errors
 * are left in *e (the caller frees them). */
void config_check_refused(const char *text, const char *name, struct config_errors *e);

/* Is there an error "NAME:LINE: KEY: ..." that also holds what? */
bool config_check_has_error(const struct config_errors *e, const char *name, unsigned line,
                            const char *key, const char *what);

/* text loaded as name: the configuration, its errors printed and the
 * test stopped when there are any. */
struct config *config_check_loaded(const char *text, const char *name);

#endif
