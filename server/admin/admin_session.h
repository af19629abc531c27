/* admin_session.h - the console's logins: the admin token, given once, is
 * exchanged for a session cookie (HttpOnly, SameSite=Strict, an expiry),
 * so the page never keeps the token; and the check that an action a
 * session asks for comes from the console's own page (its CSRF token in
 * X-CSRF-Token, and an Origin, when the browser sends one, that is the
 * admin API's own).
 *
 * Sessions are random 256-bit ids (libsodium), at most `max` at once (a
 * new one pushes out the oldest), each for ttl_s seconds. One lock: the
 * admin API's threads share them.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ADMIN_SESSION_H
#define EMG_ADMIN_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMIN_SESSION_COOKIE "emg_session"
#define ADMIN_SESSION_HEX 65       /* 64 hex digits and the NUL */

struct admin_sessions;

struct admin_sessions *admin_sessions_create(unsigned max, unsigned ttl_s);
void admin_sessions_destroy(struct admin_sessions *s);

/* A new session at Unix second now: its id (the cookie's value) and CSRF
 * token, and when it ends. */
void admin_session_new(struct admin_sessions *s, int64_t now, char id[ADMIN_SESSION_HEX],
                       char csrf[ADMIN_SESSION_HEX], int64_t *expires);

/* The live session a Cookie header names: true, with its CSRF token and
 * end. */
bool admin_session_find(struct admin_sessions *s, const char *cookie_header, int64_t now, char csrf[ADMIN_SESSION_HEX],
                        int64_t *expires);

/* Ends the session a Cookie header names (logout). */
void admin_session_end(struct admin_sessions *s, const char *cookie_header);

/* Whether an action of a session comes from the console's own page: the
 * request's X-CSRF-Token is the session's, and its Origin (when there is
 * one) is scheme://Host of this very API. */
bool admin_session_same_site(const char *csrf, const char *csrf_header, const char *origin, const char *host,
                             bool https);

/* The Set-Cookie value for session id (NULL: one that ends the session). */
void admin_session_cookie(char *out, size_t cap, const char *id, unsigned ttl_s, bool https);

#endif
