/* logins.h - the logins room: who may log in. Password hashes and their
 * checks (password.h), and the guard that blocks an address after too many
 * failed logins (auth_guard.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_LOGINS_H
#define EMG_LOGINS_H

#include "password.h"
#include "auth_guard.h"

#endif
