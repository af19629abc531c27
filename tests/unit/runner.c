/* runner.c - runs the CUnit suites named on the command line (all without arguments).
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <CUnit/Basic.h>
#include "testutil.h"

#define SUITE(name) void suite_##name(void);
#include "suites.h"
#undef SUITE

static const struct {
  const char *name;
  void (*add)(void);
} suites[] = {
#define SUITE(name) { #name, suite_##name },
#include "suites.h"
#undef SUITE
};

static unsigned skipped;

void test_skip(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  printf("\n  SKIPPED: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  skipped++;
}

int main(int argc, char **argv)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 2;
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    int wanted = argc < 2;
    for (int a = 1; a < argc; a++)
      if (strcmp(argv[a], suites[i].name) == 0)
        wanted = 1;
    if (wanted)
      suites[i].add();
  }
  if (CU_get_registry()->uiNumberOfSuites == 0) {
    fprintf(stderr, "runner: no suite named %s\n", argc > 1 ? argv[1] : "(none)");
    CU_cleanup_registry();
    return 2;
  }
  CU_basic_set_mode(CU_BRM_NORMAL);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
  unsigned ran = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  printf("\n");
  if (failed || ran == 0)
    return 1;
  if (skipped)
    printf("%u test%s skipped\n", skipped, skipped == 1 ? "" : "s");
  return skipped ? TEST_SKIPPED : 0;
}
