/* account_store.h - general.accounts_file written back.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef EMG_ACCOUNT_STORE_H
#define EMG_ACCOUNT_STORE_H

#include <stddef.h>
#include "config.h"

/* Writes the n accounts of list to path atomically (a temporary file,
 * fsync, rename, fsync of its folder). Each must hold a password_hash.
 * Returns 0, or -1 with the file and the reason in err. */
int account_store_write(const char *path, const struct config_account *list, size_t n, char *err,
                        size_t err_len);

#endif
