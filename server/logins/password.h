/* password.h - an account's password checked against what the
 * configuration holds: a cleartext password, or a hash string made by
 * crypt(3) (libxcrypt) or by libsodium:
 *
 *   yescrypt  "$y$..."                   crypt_r; what password_hash_new makes
 *   bcrypt    "$2b$", "$2y$", "$2a$..."  crypt_r (one algorithm under three
 *                                        names; not "$2x$", the buggy variant)
 *   SHA-512   "$6$..."                   crypt_r
 *   argon2id  "$argon2id$..."            libsodium
 *
 * Every function is thread-safe, allocates only for the call (crypt_r's
 * 32 KB work area is on the heap, not the caller's stack) and never logs:
 * the caller decides what to say, and no password or hash reaches a log.
 *
 * A verification costs what the hash asks for, in time and memory.
 * Measured with bench/password_bench (median of 30, one thread, on a
 * 2-core x86-64 development VM with AVX2):
 *   yescrypt, libxcrypt's default cost (5: 16 MiB)            25 ms
 *   bcrypt cost 10                                              61 ms
 *   bcrypt cost 5 (libxcrypt's default)                         2.0 ms
 *   SHA-512 crypt, 5,000 rounds (the default)                   2.5 ms
 *   argon2id, libsodium's interactive limits (t=2, 64 MiB)    115 ms
 *   cleartext                                                   1 us
 * So hashes are checked at logins only, never per message; logins at once
 * each take their hash's memory; and password_hash_valid, which hashes a
 * probe, costs a configuration load one verification per crypt(3) hash.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_PASSWORD_H
#define EMG_PASSWORD_H

#include <stdbool.h>
#include <stddef.h>

#define PASSWORD_ERR_LEN 256
/* A buffer that holds any hash password_hash_new makes (73 bytes today). */
#define PASSWORD_HASH_LEN 128
/* Longer given passwords never match and are not hashed: SHA-512 crypt's
 * time grows with the password's length. */
#define PASSWORD_GIVEN_MAX 256

enum password_kind {
  PASSWORD_UNKNOWN = 0,   /* not a hash this module verifies */
  PASSWORD_YESCRYPT,
  PASSWORD_BCRYPT,
  PASSWORD_SHA512,
  PASSWORD_ARGON2ID,
};

/* The kind of hash stored is, by its prefix alone (NULL: PASSWORD_UNKNOWN). */
enum password_kind password_kind_of(const char *stored);

/* "yescrypt", "bcrypt", "sha512crypt", "argon2id" or "unknown". */
const char *password_kind_name(enum password_kind kind);

/* For the configuration loader: whether stored is a hash that some password
 * can match, at a cost a login can bear.
 *
 * The cost parameters are read first, without hashing: more than 1 GiB of
 * memory (yescrypt, argon2id), a bcrypt cost over 16, SHA-512 rounds over
 * 10,000,000 or argon2id t over 10 are refused (each takes seconds a
 * login; the probe below would take hours for "$2b$31$").
 *
 * A crypt(3) hash is then hashed once as a probe, which costs one
 * verification (see above): crypt_r must not fail ("*0"), and its result
 * must have the stored string's form (same parameters and salt, a digest
 * of the same length and alphabet), or no password would ever match it, as
 * with a hash cut short in copying. An argon2id hash is decoded by
 * libsodium, without hashing: it must be shorter than 128 characters
 * (libsodium decodes no longer one); a digest cut short but still 16 bytes
 * or more passes (it reads as a shorter tag, which never matches).
 *
 * On false, err (err_len bytes; may be NULL) says what is wrong, quoting
 * at most the scheme and the cost parameters, never the salt or digest. */
bool password_hash_valid(const char *stored, char *err, size_t err_len);

/* Whether given is the password stored holds. stored_is_hash says whether
 * stored is a hash (from the configuration's key, not guessed from the
 * text: a cleartext password may start with '$'). Cleartext is compared in
 * constant time whatever the lengths (as BLAKE2b digests). A hash of an
 * unknown kind, a given password longer than PASSWORD_GIVEN_MAX and any
 * failure (out of memory) never match. An empty cleartext matches only an
 * empty given password: whether one is allowed is the caller's rule. */
bool password_verify(const char *stored, bool stored_is_hash, const char *given);

/* A yescrypt hash of given with a fresh random salt and libxcrypt's default
 * cost, written to out (out_len bytes; PASSWORD_HASH_LEN is enough), for
 * emgctl and the admin API to store instead of the password. Returns 0, or
 * -1 with errno: EINVAL for an empty given password or one longer than
 * PASSWORD_GIVEN_MAX, ERANGE when out is too small, ENOMEM, or what
 * libxcrypt set (no entropy). out is left "" on failure. */
int password_hash_new(const char *given, char *out, size_t out_len);

#endif
