/* password_bench.c - what one password_verify costs for each stored form:
 * the figures in server/logins/password.h's header comment come from here.
 *
 * Each hash is made once (with a fresh salt), then verified N times with
 * the right password; prints the median and the slowest time of one
 * verification. Single thread; run it on a quiet machine.
 *
 * Usage: password_bench [--rounds N]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <crypt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "password.h"

#define PW "correct horse battery"
#define MAX_ROUNDS 1000

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A crypt(3) hash of PW with the given prefix and cost (0: default). */
static int make_crypt(const char *prefix, unsigned long count, char *out, size_t len)
{
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  struct crypt_data *data = calloc(1, sizeof *data);
  const char *r = NULL;
  if (data && crypt_gensalt_rn(prefix, count, NULL, 0, setting, sizeof setting))
    r = crypt_r(PW, setting, data);
  int rc = r && r[0] != '*' ? 0 : -1;
  if (rc == 0)
    snprintf(out, len, "%s", r);
  free(data);
  return rc;
}

static void run(const char *label, const char *stored, bool is_hash, const char *given, int rounds)
{
  static uint64_t ns[MAX_ROUNDS];
  for (int i = 0; i < rounds; i++) {
    uint64_t t0 = clock_now_ns();
    if (!password_verify(stored, is_hash, given)) {
      fprintf(stderr, "password_bench: %s: the right password was refused\n", label);
      exit(1);
    }
    ns[i] = clock_now_ns() - t0;
  }
  qsort(ns, (size_t)rounds, sizeof ns[0], cmp_u64);
  printf("%-44s median %10.3f ms   max %10.3f ms\n", label, ns[rounds / 2] / 1e6,
         ns[rounds - 1] / 1e6);
}

int main(int argc, char **argv)
{
  int rounds = 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: password_bench [--rounds N]\n");
      return 2;
    }
  }
  if (rounds < 1 || rounds > MAX_ROUNDS || sodium_init() < 0) {
    fprintf(stderr, "password_bench: rounds from 1 to %d\n", MAX_ROUNDS);
    return 2;
  }

  static const struct {
    const char *label, *prefix;
    unsigned long count;
  } crypts[] = {
    { "yescrypt, default cost (5)", "$y$", 0 },
    { "bcrypt, cost 10", "$2b$", 10 },
    { "bcrypt, default cost (5)", "$2b$", 0 },
    { "sha512crypt, default rounds (5000)", "$6$", 0 },
  };
  char hash[CRYPT_OUTPUT_SIZE];
  for (size_t i = 0; i < sizeof crypts / sizeof crypts[0]; i++) {
    if (make_crypt(crypts[i].prefix, crypts[i].count, hash, sizeof hash) != 0) {
      fprintf(stderr, "password_bench: cannot make a %s hash\n", crypts[i].label);
      return 1;
    }
    run(crypts[i].label, hash, true, PW, rounds);
  }

  char argon[crypto_pwhash_argon2id_STRBYTES];
  if (crypto_pwhash_argon2id_str(argon, PW, strlen(PW), crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE,
                                 crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE) != 0) {
    fprintf(stderr, "password_bench: cannot make an argon2id hash\n");
    return 1;
  }
  run("argon2id, interactive (t=2, 64 MiB)", argon, true, PW, rounds);

  if (password_hash_new(PW, hash, sizeof hash) != 0) {
    fprintf(stderr, "password_bench: password_hash_new failed\n");
    return 1;
  }
  run("password_hash_new's hash (yescrypt)", hash, true, PW, rounds);
  run("cleartext", PW, false, PW, rounds);
  return 0;
}
