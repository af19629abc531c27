/* config_checks.h - asserting on configuration errors, for the suites that
 * load bad configuration text (config, router).
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

#endif
