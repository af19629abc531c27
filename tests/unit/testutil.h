/* testutil.h - helpers shared by the unit suites.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef EMG_TESTUTIL_H
#define EMG_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <CUnit/CUnit.h>

/* One captured frame or PDU from a tests/data/vectors file (*.hex). */
struct test_vector {
  char label[64];          /* e.g. "O51", "R51/A", "submit_sm", "submit_sm_resp/0x0" */
  char comment[512];       /* the readable rendering on the preceding '#' line */
  uint8_t *bytes;          /* the whole frame/PDU */
  size_t len;
};

/* Loads tests/data/vectors/<file>. Returns the number of vectors (>0) and a
 * malloc'ed array in *out, or -1 on error. Free with test_vectors_free(). */
int test_vectors_load(const char *file, struct test_vector **out);
void test_vectors_free(struct test_vector *v, int n);

/* Hex string (spaces ignored) to bytes; returns length or -1. Caller frees *out. */
int test_unhex(const char *hex, uint8_t **out);

/* Adds a suite with the given tests; a NULL-terminated list of {name, fn}. */
struct test_case {
  const char *name;
  void (*fn)(void);
};
void test_add_suite(const char *suite_name, const struct test_case *cases);

/* A test that cannot run here (no tmpfs, no O_DIRECT) says why and returns:
 * the runner then exits with TEST_SKIPPED, which ctest reports as skipped
 * rather than passed (SKIP_RETURN_CODE), unless something failed. */
#define TEST_SKIPPED 77
void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
