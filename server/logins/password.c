/* password.c - passwords checked against cleartext or hash strings, through
 * libxcrypt (yescrypt, bcrypt, SHA-512 crypt) and libsodium (argon2id);
 * see password.h. Nothing here logs: the caller knows whose login it is.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <crypt.h>
#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "password.h"

static const struct {
  const char *prefix;
  enum password_kind kind;
} kinds[] = {
  { "$y$", PASSWORD_YESCRYPT },
  { "$2b$", PASSWORD_BCRYPT },
  { "$2y$", PASSWORD_BCRYPT },
  { "$2a$", PASSWORD_BCRYPT },
  { "$6$", PASSWORD_SHA512 },
  { "$argon2id$", PASSWORD_ARGON2ID },
};

/* Schemes an operator may bring from elsewhere, named in the refusal. */
static const struct {
  const char *prefix, *name;
} refused_schemes[] = {
  { "$1$", "MD5 crypt" },
  { "$5$", "SHA-256 crypt" },
  { "$2x$", "bcrypt's buggy $2x$ variant" },
  { "$7$", "scrypt" },
  { "$gy$", "gost-yescrypt" },
  { "$argon2i$", "argon2i" },
  { "$argon2d$", "argon2d" },
};

#define SUPPORTED "yescrypt ($y$), bcrypt ($2b$, $2y$), SHA-512 crypt ($6$) or argon2id ($argon2id$)"

/* The characters of a crypt(3) digest. */
#define CRYPT_ALPHABET "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/* A bcrypt setting: "$2b$" + two cost digits + '$' + 22 salt characters;
 * the digest follows without a '$'. */
#define BCRYPT_SETTING_LEN 29

enum password_kind password_kind_of(const char *stored)
{
  if (!stored)
    return PASSWORD_UNKNOWN;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strncmp(stored, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
      return kinds[i].kind;
  return PASSWORD_UNKNOWN;
}

const char *password_kind_name(enum password_kind kind)
{
  switch (kind) {
  case PASSWORD_YESCRYPT: return "yescrypt";
  case PASSWORD_BCRYPT: return "bcrypt";
  case PASSWORD_SHA512: return "sha512crypt";
  case PASSWORD_ARGON2ID: return "argon2id";
  case PASSWORD_UNKNOWN: break;
  }
  return "unknown";
}

static bool fail(char *err, size_t err_len, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static bool fail(char *err, size_t err_len, const char *fmt, ...)
{
  if (err && err_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* sodium_init is idempotent and thread-safe; it picks the CPU's
 * implementations, so it comes before any other libsodium call. */
static bool sodium_ready(void)
{
  return sodium_init() >= 0;
}

/* crypt_r(phrase, setting) into out. The work area (~32 KB) comes from the
 * heap, so that a connector thread's small stack is not asked for it, and
 * is wiped after. False for libxcrypt's failure tokens ("*0", "*1") and for
 * no memory; errno says which. */
static bool crypt_into(const char *phrase, const char *setting, char out[CRYPT_OUTPUT_SIZE])
{
  struct crypt_data *data = calloc(1, sizeof *data);
  if (!data)
    return false;
  errno = 0;
  const char *r = crypt_r(phrase, setting, data);
  bool ok = r && r[0] != '*';
  int saved = ok ? 0 : (errno ? errno : EINVAL);
  if (ok)
    memcpy(out, r, strlen(r) + 1);  /* within CRYPT_OUTPUT_SIZE, as data->output is */
  explicit_bzero(data, sizeof *data);
  free(data);
  errno = saved;
  return ok;
}

/* Equal strings, the contents compared in constant time (lengths are not
 * secret: every hash of a kind has the same). */
static bool same_text(const char *a, const char *b)
{
  size_t n = strlen(a);
  return strlen(b) == n && sodium_memcmp(a, b, n) == 0;
}

/* Cleartext compared as BLAKE2b digests: the comparison takes the same
 * time whatever the contents and however long each side is, up to
 * BLAKE2b's 128-byte blocks. */
static bool clear_equal(const char *stored, const char *given)
{
  unsigned char ds[crypto_generichash_BYTES], dg[crypto_generichash_BYTES];
  if (crypto_generichash(ds, sizeof ds, (const unsigned char *)stored, strlen(stored), NULL, 0) != 0 ||
      crypto_generichash(dg, sizeof dg, (const unsigned char *)given, strlen(given), NULL, 0) != 0)
    return false;
  bool equal = sodium_memcmp(ds, dg, sizeof ds) == 0;
  sodium_memzero(ds, sizeof ds);
  sodium_memzero(dg, sizeof dg);
  return equal;
}

/* The scheme prefix of stored ("$1$", "$argon2i$"), for a message: the
 * salt and digest are never quoted. */
static int scheme_len(const char *stored)
{
  size_t n = 1 + strcspn(stored + 1, "$");
  if (stored[n] == '$')
    n++;
  return n > 16 ? 16 : (int)n;
}

static bool unknown_hash(const char *stored, char *err, size_t err_len)
{
  if (stored[0] != '$')
    return fail(err, err_len, "not a password hash (a cleartext password?): a hash starts "
                "with the prefix of " SUPPORTED);
  for (size_t i = 0; i < sizeof refused_schemes / sizeof refused_schemes[0]; i++)
    if (strncmp(stored, refused_schemes[i].prefix, strlen(refused_schemes[i].prefix)) == 0)
      return fail(err, err_len, "%s hashes ('%s') are not supported: use " SUPPORTED,
                  refused_schemes[i].name, refused_schemes[i].prefix);
  return fail(err, err_len, "unknown hash scheme '%.*s': use " SUPPORTED, scheme_len(stored),
              stored);
}

/* The form of a crypt(3) hash of a kind, for a message. */
static const char *crypt_form(enum password_kind kind)
{
  switch (kind) {
  case PASSWORD_BCRYPT: return "$2b$COST$ with a COST from 04 to 31, then 53 characters";
  case PASSWORD_SHA512: return "$6$SALT$DIGEST or $6$rounds=N$SALT$DIGEST";
  default: return "$y$PARAMETERS$SALT$DIGEST, as mkpasswd -m yescrypt writes";
  }
}

/* The most a stored hash may ask of one login. Only a mistake goes past
 * them (each takes seconds here, see password.h), and password_hash_valid
 * would otherwise hash its probe for hours ("$2b$31$") or map more memory
 * than the machine has. */
#define MAX_MEMORY (1ull << 30)      /* yescrypt and argon2id: libxcrypt's top cost */
#define MAX_BCRYPT_COST 16
#define MAX_SHA512_ROUNDS 10000000ul
#define MAX_ARGON2_PASSES 10

/* A character's value in crypt's base 64, or -1. */
static int a64(char c)
{
  const char *p = c ? strchr(CRYPT_ALPHABET, c) : NULL;
  return p ? (int)(p - CRYPT_ALPHABET) : -1;
}

/* What the cost parameters, read without hashing, ask of one login: a
 * message when it is too much. Forms this cannot read are left to the probe
 * (yescrypt's longer parameter forms, which libxcrypt itself does not
 * write, are not limited). */
static bool cost_bearable(const char *stored, enum password_kind kind, char *err, size_t err_len)
{
  unsigned long v = 0;
  switch (kind) {
  case PASSWORD_BCRYPT:
    if (isdigit((unsigned char)stored[4]) && isdigit((unsigned char)stored[5]))
      v = (unsigned long)(stored[4] - '0') * 10 + (unsigned long)(stored[5] - '0');
    if (v > MAX_BCRYPT_COST)
      return fail(err, err_len, "bcrypt cost %lu is too high: at most %d (each step doubles a "
                  "login's time; cost 10 takes about 60 ms)", v, MAX_BCRYPT_COST);
    break;
  case PASSWORD_SHA512:
    if (strncmp(stored + 3, "rounds=", 7) == 0 && isdigit((unsigned char)stored[10]) &&
        (v = strtoul(stored + 10, NULL, 10)) > MAX_SHA512_ROUNDS)
      return fail(err, err_len, "sha512crypt rounds=%lu is too many: at most %lu (5,000 take "
                  "about 2.5 ms)", v, MAX_SHA512_ROUNDS);
    break;
  case PASSWORD_YESCRYPT: {
    /* "$y$" flavor, log2(N) - 1, r - 1, one character each as libxcrypt
     * writes them (values under 48); memory is 128 * r * N bytes. */
    int flavor = a64(stored[3]), n = flavor < 0 ? -1 : a64(stored[4]);
    int r = n < 0 ? -1 : a64(stored[5]);
    if (flavor >= 48 || n < 0 || r < 0 || r >= 48)
      break;
    if (n >= 40 || (128ull * (unsigned)(r + 1) << (n + 1)) > MAX_MEMORY)
      return fail(err, err_len, "yescrypt parameters '%.3s' ask too much memory of a login: "
                  "at most 1 GiB (libxcrypt's highest cost, 11, as mkpasswd -R 11 writes)",
                  stored + 3);
    break;
  }
  case PASSWORD_ARGON2ID: {
    unsigned long m = 0, t = 0;
    if (sscanf(stored, "$argon2id$v=%*u$m=%lu,t=%lu,", &m, &t) == 2 &&
        (m > MAX_MEMORY / 1024 || t > MAX_ARGON2_PASSES))
      return fail(err, err_len, "argon2id m=%lu,t=%lu asks too much of a login: at most "
                  "m=%llu (1 GiB) and t=%d", m, t, MAX_MEMORY / 1024, MAX_ARGON2_PASSES);
    break;
  }
  case PASSWORD_UNKNOWN:
    break;
  }
  return true;
}

/* A crypt(3) hash some password can match: hashing a probe with it as the
 * setting must work, and give a string of the stored one's form. */
static bool crypt_hash_valid(const char *stored, enum password_kind kind, char *err,
                             size_t err_len)
{
  const char *name = password_kind_name(kind);
  char probe[CRYPT_OUTPUT_SIZE];
  if (!crypt_into("probe", stored, probe)) {
    if (errno == ENOMEM)
      return fail(err, err_len, "%s hash not checked: out of memory", name);
    return fail(err, err_len, "malformed %s hash: libxcrypt refuses its parameters or salt "
                "(expected %s)", name, crypt_form(kind));
  }
  /* The probe has libxcrypt's own form: its digest starts after the setting. */
  size_t digest_at = kind == PASSWORD_BCRYPT ? BCRYPT_SETTING_LEN
                                             : (size_t)(strrchr(probe, '$') - probe) + 1;
  size_t want = strlen(probe), have = strlen(stored);
  bool same_setting = have >= digest_at && memcmp(probe, stored, digest_at) == 0;
  explicit_bzero(probe, sizeof probe);
  if (!same_setting)
    return fail(err, err_len, "malformed %s hash: no digest, or its parameters or salt are "
                "not written the way libxcrypt writes them, so no password can match it", name);
  if (have != want) {
    size_t off = have > want ? have - want : want - have;
    return fail(err, err_len, "malformed %s hash: its digest is %zu character%s %s than it "
                "should be (cut short, or something added, in copying?)", name, off,
                off == 1 ? "" : "s", have < want ? "shorter" : "longer");
  }
  if (stored[digest_at + strspn(stored + digest_at, CRYPT_ALPHABET)] != '\0')
    return fail(err, err_len, "malformed %s hash: its digest has characters other than "
                "./0-9A-Za-z", name);
  return true;
}

bool password_hash_valid(const char *stored, char *err, size_t err_len)
{
  if (!stored || !*stored)
    return fail(err, err_len, "empty password hash");
  enum password_kind kind = password_kind_of(stored);
  if (kind == PASSWORD_UNKNOWN)
    return unknown_hash(stored, err, err_len);
  if (!cost_bearable(stored, kind, err, err_len))
    return false;
  if (kind != PASSWORD_ARGON2ID)
    return crypt_hash_valid(stored, kind, err, err_len);
  if (!sodium_ready())
    return fail(err, err_len, "argon2id hash not checked: libsodium did not start");
  /* Decodes the whole string (parameters, salt, digest) without hashing. */
  if (strlen(stored) >= crypto_pwhash_argon2id_STRBYTES ||
      crypto_pwhash_argon2id_str_needs_rehash(stored, crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE,
                                              crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE) == -1)
    return fail(err, err_len, "malformed argon2id hash: expected "
                "$argon2id$v=19$m=MEMORY,t=TIME,p=LANES$SALT$DIGEST, at most %d characters",
                crypto_pwhash_argon2id_STRBYTES - 1);
  return true;
}

bool password_verify(const char *stored, bool stored_is_hash, const char *given)
{
  if (!stored || !given || strnlen(given, PASSWORD_GIVEN_MAX + 1) > PASSWORD_GIVEN_MAX ||
      !sodium_ready())
    return false;
  if (!stored_is_hash)
    return clear_equal(stored, given);
  switch (password_kind_of(stored)) {
  case PASSWORD_ARGON2ID:
    return strlen(stored) < crypto_pwhash_argon2id_STRBYTES &&
           crypto_pwhash_argon2id_str_verify(stored, given, strlen(given)) == 0;
  case PASSWORD_YESCRYPT:
  case PASSWORD_BCRYPT:
  case PASSWORD_SHA512: {
    char hash[CRYPT_OUTPUT_SIZE];
    bool ok = crypt_into(given, stored, hash) && same_text(hash, stored);
    explicit_bzero(hash, sizeof hash);
    return ok;
  }
  case PASSWORD_UNKNOWN:
    break;
  }
  return false;
}

int password_hash_new(const char *given, char *out, size_t out_len)
{
  char setting[CRYPT_GENSALT_OUTPUT_SIZE], hash[CRYPT_OUTPUT_SIZE];
  if (out && out_len)
    out[0] = '\0';
  size_t n = given ? strnlen(given, PASSWORD_GIVEN_MAX + 1) : 0;
  if (n == 0 || n > PASSWORD_GIVEN_MAX || !out) {
    errno = EINVAL;
    return -1;
  }
  /* No random bytes given: libxcrypt takes them from the kernel. Count 0
   * is its default cost, which follows its own idea of a sound one. */
  if (!crypt_gensalt_rn("$y$", 0, NULL, 0, setting, sizeof setting))
    return -1;
  if (!crypt_into(given, setting, hash))
    return -1;
  size_t len = strlen(hash);
  int rc = 0;
  if (len >= out_len) {
    errno = ERANGE;
    rc = -1;
  } else {
    memcpy(out, hash, len + 1);
  }
  explicit_bzero(hash, sizeof hash);
  return rc;
}
