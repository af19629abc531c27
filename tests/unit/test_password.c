/* test_password.c - password checks: cleartext, each hash kind against
 * hashes made here and against fixed ones made by other programs, the
 * configuration loader's refusals, and new hashes.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <crypt.h>
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include "password.h"
#include "testutil.h"

#define PW "correct horse"

/* Made once by other programs (the password is PW unless said), so that a
 * hash written elsewhere is known to verify, not only our own round trip:
 *   yescrypt       mkpasswd -m yescrypt (whois 5.5.17)
 *   yescrypt UTF-8 the same, of "pässwörd" in UTF-8
 *   bcrypt $2b$    mkpasswd -m bcrypt -R 10
 *   bcrypt $2y$    htpasswd -nbB -C 5 (apache2-utils 2.4, APR's own bcrypt)
 *   SHA-512 crypt  openssl passwd -6 (OpenSSL 3.0, its own implementation)
 *   SHA-512 rounds mkpasswd -m sha512crypt -R 1000
 *   argon2id       argon2 SALT -id -t 2 -m 12 -p 1 -l 32 -e (the reference
 *                  implementation's command, 0~20171227) */
static const struct {
  const char *hash, *password;
} known[] = {
  { "$y$j9T$Xib.iFndFAHMXBdG80OKB/$pjODb2D38g43Gr8knzCBTXG3MNlLPU79UmIn4bLzzg2", PW },
  { "$y$j9T$YEUbZj1fDxTwjoxVExRbH0$RvN1iEto4ZM7JP4PanbA.XiOnHQcALGJV9YP7kt7Xe3",
    "p\xc3\xa4ssw\xc3\xb6rd" },
  { "$2b$10$/rN0N1YqVjIBZLYX4frCKOwjWlrDkLI67tlZTU2wRDIvsxSKjptPe", PW },
  { "$2y$05$2Vw0suMhfJmea4zUMuMLaedlGWkbMmtVf7ytgESCQqYZRpmjQkTVa", PW },
  { "$6$emgOpenSSLsalt16$vs593FL9UWmJparn/egHz1gYFSRfkY6rCnd5fOjN3AvJ9YxtyLFOkmHkmCUHXvX6dMdLcHq"
    "08A3ONnMVtWkQa.", PW },
  { "$6$rounds=1000$w1GWD2HT9oQ.dG1N$w8.adBwtsYwvsuGQpbNILmGBCE1FMq2y/ROCvOXkfFpyAIjz2uvICgrWmfLc0Y"
    "TF6oO.CiEwEC/8Ic7S.F.231", PW },
  { "$argon2id$v=19$m=4096,t=2,p=1$dzc1SkNQWWZCb01YVUlvQw$+Ght0u9G9u+Eej9JOQftVqZ8LfsQhNuO8fqKjmlLY0Q",
    PW },
};

/* The password and a few near misses against stored. */
static void verifies_only(const char *stored, bool is_hash, const char *password)
{
  char near[PASSWORD_GIVEN_MAX + 2];
  size_t n = strlen(password);
  bool ok = password_verify(stored, is_hash, password);
  if (!ok)
    printf("\n  %.40s... refused its password\n", stored);
  CU_ASSERT_TRUE(ok);
  snprintf(near, sizeof near, "%s", password);
  near[n - 1] ^= 1;                                         /* one bit off */
  CU_ASSERT_FALSE(password_verify(stored, is_hash, near));
  snprintf(near, sizeof near, "%.*s", (int)n - 1, password); /* a prefix */
  CU_ASSERT_FALSE(password_verify(stored, is_hash, near));
  snprintf(near, sizeof near, "%s!", password);             /* longer */
  CU_ASSERT_FALSE(password_verify(stored, is_hash, near));
  CU_ASSERT_FALSE(password_verify(stored, is_hash, ""));
  CU_ASSERT_FALSE(password_verify(stored, is_hash, NULL));
}

static void test_kind_of(void)
{
  CU_ASSERT_EQUAL(password_kind_of("$y$j9T$x$y"), PASSWORD_YESCRYPT);
  CU_ASSERT_EQUAL(password_kind_of("$2b$10$x"), PASSWORD_BCRYPT);
  CU_ASSERT_EQUAL(password_kind_of("$2y$10$x"), PASSWORD_BCRYPT);
  CU_ASSERT_EQUAL(password_kind_of("$2a$10$x"), PASSWORD_BCRYPT);
  CU_ASSERT_EQUAL(password_kind_of("$6$salt$x"), PASSWORD_SHA512);
  CU_ASSERT_EQUAL(password_kind_of("$argon2id$v=19$x"), PASSWORD_ARGON2ID);
  const char *unknown[] = { NULL, "", "secret", "$", "$y", "$2x$10$x", "$1$a$b", "$5$a$b",
                            "$argon2i$v=19$x", "$argon2$", "$7$x", "$gy$x", "y$j9T$", " $y$" };
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    CU_ASSERT_EQUAL(password_kind_of(unknown[i]), PASSWORD_UNKNOWN);
  CU_ASSERT_STRING_EQUAL(password_kind_name(PASSWORD_YESCRYPT), "yescrypt");
  CU_ASSERT_STRING_EQUAL(password_kind_name(PASSWORD_BCRYPT), "bcrypt");
  CU_ASSERT_STRING_EQUAL(password_kind_name(PASSWORD_SHA512), "sha512crypt");
  CU_ASSERT_STRING_EQUAL(password_kind_name(PASSWORD_ARGON2ID), "argon2id");
  CU_ASSERT_STRING_EQUAL(password_kind_name(PASSWORD_UNKNOWN), "unknown");
}

static void test_cleartext(void)
{
  verifies_only("secret", false, "secret");
  verifies_only(PW, false, PW);
  CU_ASSERT_FALSE(password_verify("secret", false, "Secret"));
  CU_ASSERT_FALSE(password_verify("secret", false, "secre"));
  CU_ASSERT_FALSE(password_verify("secret", false, "secrets"));
  CU_ASSERT_FALSE(password_verify("", false, "x"));
  CU_ASSERT_TRUE(password_verify("", false, ""));
  CU_ASSERT_FALSE(password_verify(NULL, false, ""));
  /* Cleartext is text, whatever it looks like; a hash is not cleartext. */
  CU_ASSERT_TRUE(password_verify("$y$j9T$abc$def", false, "$y$j9T$abc$def"));
  CU_ASSERT_FALSE(password_verify(known[0].hash, false, PW));
  /* Longer than 128 bytes (one BLAKE2b block) on either side. */
  char a[200], b[200];
  memset(a, 'a', sizeof a - 1);
  a[sizeof a - 1] = '\0';
  memcpy(b, a, sizeof b);
  CU_ASSERT_TRUE(password_verify(a, false, b));
  b[150] = 'b';
  CU_ASSERT_FALSE(password_verify(a, false, b));
  /* A given password past PASSWORD_GIVEN_MAX never matches, even itself. */
  char huge[PASSWORD_GIVEN_MAX + 2];
  memset(huge, 'h', sizeof huge - 1);
  huge[sizeof huge - 1] = '\0';
  CU_ASSERT_FALSE(password_verify(huge, false, huge));
  huge[PASSWORD_GIVEN_MAX] = '\0';
  CU_ASSERT_TRUE(password_verify(huge, false, huge));
}

static void test_known_hashes(void)
{
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    char err[PASSWORD_ERR_LEN] = "";
    bool valid = password_hash_valid(known[i].hash, err, sizeof err);
    if (!valid)
      printf("\n  %s: %s\n", known[i].hash, err);
    CU_ASSERT_TRUE(valid);
    verifies_only(known[i].hash, true, known[i].password);
    CU_ASSERT_FALSE(password_verify(known[i].hash, true, "wrong"));
  }
}

/* Hashes made here with libxcrypt and libsodium, each kind. */
static void test_generated(void)
{
  static const struct {
    const char *prefix;
    unsigned long count;   /* 0: libxcrypt's default cost */
    enum password_kind kind;
  } crypts[] = {
    { "$y$", 0, PASSWORD_YESCRYPT },
    { "$2b$", 5, PASSWORD_BCRYPT },
    { "$2y$", 5, PASSWORD_BCRYPT },
    { "$6$", 0, PASSWORD_SHA512 },
  };
  for (size_t i = 0; i < sizeof crypts / sizeof crypts[0]; i++) {
    char setting[CRYPT_GENSALT_OUTPUT_SIZE], hash[CRYPT_OUTPUT_SIZE];
    struct crypt_data data;
    memset(&data, 0, sizeof data);
    CU_ASSERT_PTR_NOT_NULL_FATAL(crypt_gensalt_rn(crypts[i].prefix, crypts[i].count, NULL, 0,
                                                  setting, sizeof setting));
    const char *r = crypt_r("generated pw", setting, &data);
    CU_ASSERT_FATAL(r && r[0] != '*');
    snprintf(hash, sizeof hash, "%s", r);
    CU_ASSERT_EQUAL(password_kind_of(hash), crypts[i].kind);
    CU_ASSERT_TRUE(password_hash_valid(hash, NULL, 0));
    verifies_only(hash, true, "generated pw");
    /* The hash is not a cleartext password. */
    CU_ASSERT_FALSE(password_verify(hash, false, "generated pw"));
  }

  char argon[crypto_pwhash_argon2id_STRBYTES];
  CU_ASSERT_FATAL(sodium_init() >= 0);
  CU_ASSERT_EQUAL_FATAL(crypto_pwhash_argon2id_str(argon, "generated pw", 12,
                                                   crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE,
                                                   crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE), 0);
  CU_ASSERT_EQUAL(password_kind_of(argon), PASSWORD_ARGON2ID);
  CU_ASSERT_TRUE(password_hash_valid(argon, NULL, 0));
  verifies_only(argon, true, "generated pw");
}

/* stored is refused by password_hash_valid with a message holding want,
 * never quoting the part after the scheme; password_verify never takes it. */
static void malformed(const char *stored, const char *want)
{
  char err[PASSWORD_ERR_LEN] = "";
  CU_ASSERT_FALSE(password_hash_valid(stored, err, sizeof err));
  bool ok = strstr(err, want) != NULL && !strstr(err, "SECRETsalt");
  if (!ok)
    printf("\n  '%s': message \"%s\" lacks \"%s\" (or quotes the salt)\n",
           stored ? stored : "(null)", err, want);
  CU_ASSERT_TRUE(ok);
  CU_ASSERT_FALSE(password_verify(stored, true, PW));
  CU_ASSERT_FALSE(password_verify(stored, true, "probe"));
}

static void test_malformed(void)
{
  const char *y = known[0].hash, *b = known[2].hash;
  char s[256];
  malformed(NULL, "empty password hash");
  malformed("", "empty password hash");
  malformed("secret", "not a password hash (a cleartext password?)");
  malformed("secret", "yescrypt ($y$)");
  malformed("$1$SECRETsalt$abcdefghijklmnopqrstuv", "MD5 crypt hashes ('$1$') are not supported");
  malformed("$5$SECRETsalt$abc", "SHA-256 crypt");
  malformed("$2x$05$SECRETsaltSECRETsalt..abcdefghijklmnopqrstuvwxyz01234", "buggy $2x$");
  malformed("$argon2i$v=19$m=4096,t=2,p=1$SECRETsalt$abc", "argon2i hashes");
  malformed("$foo$SECRETsalt$abc", "unknown hash scheme '$foo$'");
  malformed("$verylongschemename$SECRETsalt", "unknown hash scheme '$verylongschemen'");
  malformed("$", "unknown hash scheme '$'");

  malformed("$y$", "malformed yescrypt hash: libxcrypt refuses");
  malformed("$y$zzz$SECRETsalt$def", "malformed yescrypt hash");
  malformed("$y$j9T$SEC!ETsalt$def", "malformed yescrypt hash");
  snprintf(s, sizeof s, "%.*s", (int)strlen(y) - 5, y);
  malformed(s, "its digest is 5 characters shorter");
  snprintf(s, sizeof s, "%sxxx", y);
  malformed(s, "its digest is 3 characters longer");
  snprintf(s, sizeof s, "%.*s", (int)(strrchr(y, '$') - y), y);
  malformed(s, "no digest");
  /* libxcrypt itself refuses some characters anywhere ('!', ':', '*');
   * others in the digest, as '+' from standard base64, only we catch. */
  snprintf(s, sizeof s, "%s", y);
  s[strlen(s) - 3] = '!';
  malformed(s, "malformed yescrypt hash: libxcrypt refuses");
  s[strlen(s) - 3] = '+';
  malformed(s, "characters other than ./0-9A-Za-z");
  snprintf(s, sizeof s, "%s", b);
  s[strlen(s) - 1] = '+';
  malformed(s, "malformed bcrypt hash: its digest has characters other than");

  malformed("$2b$99$/rN0N1YqVjIBZLYX4frCKOwjWlrDkLI67tlZTU2wRDIvsxSKjptPe", "bcrypt cost 99 is too high");
  malformed("$2b$03$/rN0N1YqVjIBZLYX4frCKOwjWlrDkLI67tlZTU2wRDIvsxSKjptPe", "COST from 04 to 31");
  malformed("$2b$10$/rN0N1YqVjIBZLYX4frC", "malformed bcrypt hash");
  snprintf(s, sizeof s, "%.*s", (int)strlen(b) - 1, b);
  malformed(s, "its digest is 1 character shorter");

  malformed("$6$rounds=abc$SECRETsalt$x", "$6$rounds=N$SALT$DIGEST");
  malformed("$6$rounds=99999999999999$SECRETsalt$x", "is too many");
  snprintf(s, sizeof s, "%.*s", (int)strlen(known[4].hash) - 10, known[4].hash);
  malformed(s, "10 characters shorter");
  /* A salt past SHA-512 crypt's 16 characters is cut by crypt: no match. */
  malformed("$6$SECRETsaltSECRETsalt$vs593FL9UWmJparn/egHz1gYFSRfkY6rCnd5fOjN3AvJ9YxtyLFOkmHkmCUHXvX"
            "6dMdLcHq08A3ONnMVtWkQa.", "no digest, or its parameters or salt");

  malformed("$argon2id$", "malformed argon2id hash");
  malformed("$argon2id$v=19$m=4096,t=2,p=1$SECRETsalt", "malformed argon2id hash");
  /* A digest cut below argon2's least tag length (16 bytes); one cut to
   * 16 bytes or more reads as a shorter tag, which cannot be told apart. */
  malformed("$argon2id$v=19$m=4096,t=2,p=1$dzc1SkNQWWZCb01YVUlvQw$+Ght0u9G9u+Eej9JO",
            "$argon2id$v=19$m=MEMORY,t=TIME,p=LANES$SALT$DIGEST");
  /* 165 characters (a 60-byte salt, argon2 CLI): libsodium would verify
   * it but cannot decode it otherwise, so it is refused both ways. */
  malformed("$argon2id$v=19$m=4096,t=2,p=1$U1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1NTU1"
            "NTU1NTU1NTU1NTU1NTU1NT$w110LoQIQon1DS+GEgghIvnBIIKOX+tOun4QIuUUo/oC+bqdQqDcQw",
            "at most 127 characters");
  malformed("$argon2id$v=16$m=4096,t=2,p=1$dzc1SkNQWWZCb01YVUlvQw$+Ght0u9G9u+Eej9JOQftVqZ8Lfs"
            "QhNuO8fqKjmlLY0Q", "malformed argon2id hash");

  /* A short err buffer is filled and terminated; NULL is allowed. */
  char small[10];
  CU_ASSERT_FALSE(password_hash_valid("secret", small, sizeof small));
  CU_ASSERT_EQUAL(strlen(small), sizeof small - 1);
  CU_ASSERT_FALSE(password_hash_valid("secret", NULL, 0));
}

/* Costs past the limits are refused before any hashing (this test would
 * otherwise run for hours); those at the limits are not refused for cost.
 * password_verify is not asked: it would pay the cost. */
static void test_cost_limits(void)
{
  char err[PASSWORD_ERR_LEN];
  const char *too_much[][2] = {
    { "$2b$17$/rN0N1YqVjIBZLYX4frCKOwjWlrDkLI67tlZTU2wRDIvsxSKjptPe", "bcrypt cost 17 is too high" },
    { "$2b$31$/rN0N1YqVjIBZLYX4frCKOwjWlrDkLI67tlZTU2wRDIvsxSKjptPe", "at most 16" },
    { "$6$rounds=10000001$w1GWD2HT9oQ.dG1N$x", "rounds=10000001 is too many" },
    { "$6$rounds=999999999$w1GWD2HT9oQ.dG1N$x", "at most 10000000" },
    /* N = 2^19, r = 32: 2 GiB; N = 2^18, r = 33: just over 1 GiB. */
    { "$y$jGT$z5A6Ixbsf1jJ5MEdMyN21/$MmVFiYbTBPV2pP/69TOK4.DYN94BvWcO8xaYaLhR3AB",
      "yescrypt parameters 'jGT' ask too much memory" },
    { "$y$jFU$z5A6Ixbsf1jJ5MEdMyN21/$x", "at most 1 GiB" },
    { "$y$jyT$z5A6Ixbsf1jJ5MEdMyN21/$x", "too much memory" },
    { "$argon2id$v=19$m=1048577,t=2,p=1$dzc1SkNQWWZCb01YVUlvQw$+Ght0u9G9u+Eej9JOQftVqZ8LfsQhNuO8fqKjmlLY0Q",
      "argon2id m=1048577,t=2 asks too much" },
    { "$argon2id$v=19$m=4096,t=11,p=1$dzc1SkNQWWZCb01YVUlvQw$+Ght0u9G9u+Eej9JOQftVqZ8LfsQhNuO8fqKjmlLY0Q",
      "at most m=1048576 (1 GiB) and t=10" },
  };
  for (size_t i = 0; i < sizeof too_much / sizeof too_much[0]; i++) {
    err[0] = '\0';
    CU_ASSERT_FALSE(password_hash_valid(too_much[i][0], err, sizeof err));
    if (!strstr(err, too_much[i][1]))
      printf("\n  %.20s...: \"%s\" lacks \"%s\"\n", too_much[i][0], err, too_much[i][1]);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, too_much[i][1]));
  }
  /* At the limits, or unreadable (left to the probe): other messages. */
  const char *not_for_cost[] = {
    "$2b$16$/rN0N1YqVjIBZLYX4frC",          /* salt cut: the probe refuses it at once */
    "$2b$xx$/rN0N1YqVjIBZLYX4frCKOwjWlrDkLI67tlZTU2wRDIvsxSKjptPe",
    "$6$rounds=10000000$!x",                /* '!': libxcrypt refuses it at once */
    "$6$rounds=-1$w1GWD2HT9oQ.dG1N$x",
    "$y$",
    "$y$j",
    "$y$jF",
    "$y$jFT$!x",                            /* 1 GiB, the limit; '!' refused at once */
    "$argon2id$v=19$m=1048576,t=10,p=1$x",
  };
  for (size_t i = 0; i < sizeof not_for_cost / sizeof not_for_cost[0]; i++) {
    err[0] = '\0';
    CU_ASSERT_FALSE(password_hash_valid(not_for_cost[i], err, sizeof err));
    if (strstr(err, "too "))
      printf("\n  %s refused for its cost: %s\n", not_for_cost[i], err);
    CU_ASSERT_PTR_NULL(strstr(err, "too "));
  }
}

static void test_hash_new(void)
{
  char h1[PASSWORD_HASH_LEN], h2[PASSWORD_HASH_LEN];
  CU_ASSERT_EQUAL_FATAL(password_hash_new(PW, h1, sizeof h1), 0);
  CU_ASSERT_EQUAL_FATAL(password_hash_new(PW, h2, sizeof h2), 0);
  CU_ASSERT_EQUAL(password_kind_of(h1), PASSWORD_YESCRYPT);
  CU_ASSERT_NSTRING_EQUAL(h1, "$y$", 3);
  CU_ASSERT_STRING_NOT_EQUAL(h1, h2);  /* a fresh salt each time */
  CU_ASSERT_TRUE(password_hash_valid(h1, NULL, 0));
  verifies_only(h1, true, PW);
  verifies_only(h2, true, PW);

  char huge[PASSWORD_GIVEN_MAX + 2];
  memset(huge, 'h', sizeof huge - 1);
  huge[sizeof huge - 1] = '\0';
  errno = 0;
  CU_ASSERT_EQUAL(password_hash_new(huge, h1, sizeof h1), -1);
  CU_ASSERT_EQUAL(errno, EINVAL);
  CU_ASSERT_STRING_EQUAL(h1, "");
  huge[PASSWORD_GIVEN_MAX] = '\0';
  CU_ASSERT_EQUAL_FATAL(password_hash_new(huge, h1, sizeof h1), 0);
  CU_ASSERT_TRUE(password_verify(h1, true, huge));
  errno = 0;
  CU_ASSERT_EQUAL(password_hash_new("", h1, sizeof h1), -1);
  CU_ASSERT_EQUAL(errno, EINVAL);
  CU_ASSERT_EQUAL(password_hash_new(NULL, h1, sizeof h1), -1);
  errno = 0;
  CU_ASSERT_EQUAL(password_hash_new(PW, h1, 20), -1);
  CU_ASSERT_EQUAL(errno, ERANGE);
  CU_ASSERT_STRING_EQUAL(h1, "");
}

/* Verifications on threads with small stacks, at once: crypt_r's work
 * area is not on the stack, and calls share nothing. */
struct verify_job {
  const char *hash, *password;
  unsigned wrong;
};

static void *verify_thread(void *arg)
{
  struct verify_job *j = arg;
  for (int i = 0; i < 3; i++) {
    j->wrong += !password_verify(j->hash, true, j->password);
    j->wrong += password_verify(j->hash, true, "wrong");
  }
  return NULL;
}

static void test_threads(void)
{
  enum { N = 6 };
  struct verify_job jobs[N];
  pthread_t threads[N];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 32 * 1024);  /* smaller than one struct crypt_data */
  size_t pick[N] = { 0, 3, 4, 6, 1, 5 };
  for (int i = 0; i < N; i++) {
    jobs[i] = (struct verify_job){ known[pick[i]].hash, known[pick[i]].password, 0 };
    CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[i], &attr, verify_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < N; i++) {
    pthread_join(threads[i], NULL);
    CU_ASSERT_EQUAL(jobs[i].wrong, 0);
  }
  pthread_attr_destroy(&attr);
}

void suite_password(void);
void suite_password(void)
{
  static const struct test_case cases[] = {
    { "kind of a stored string", test_kind_of },
    { "cleartext", test_cleartext },
    { "hashes made by other programs", test_known_hashes },
    { "hashes made here, each kind", test_generated },
    { "malformed hashes refused", test_malformed },
    { "costs no login should bear", test_cost_limits },
    { "new hash round trip", test_hash_new },
    { "threads with small stacks", test_threads },
    { NULL, NULL },
  };
  test_add_suite("password", cases);
}
