/* test_status_line.c - the periodic status line: when it is written (a
 * look every 10 s, a line at a look only when something moved, an idle
 * line once an hour, always at the stop) and what it says of refusals.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>
#include "status_line.h"
#include "testutil.h"

#define START 1000000u   /* a monotonic clock is far from 0 */

static void test_first_line_after_a_look(void)
{
  struct status_line st;
  struct status_counts n = { 0 };
  status_line_start(&st, START);
  CU_ASSERT_FALSE(status_line_due(&st, &n, START + 100, false));
  CU_ASSERT_FALSE(status_line_due(&st, &n, START + STATUS_LINE_EVERY_MS - 1, false));
  /* The first look writes the first line, whatever it says. */
  CU_ASSERT_TRUE(status_line_due(&st, &n, START + STATUS_LINE_EVERY_MS, false));
}

static void test_only_when_something_moved(void)
{
  struct status_line st;
  struct status_counts n = { 0 };
  uint64_t t = START;
  status_line_start(&st, t);
  CU_ASSERT_TRUE(status_line_due(&st, &n, t += STATUS_LINE_EVERY_MS, false));
  /* Idle: no line at the following looks. */
  for (int i = 0; i < 10; i++)
    CU_ASSERT_FALSE(status_line_due(&st, &n, t += STATUS_LINE_EVERY_MS, false));
  /* A counter moved: a line at the next look, not before it. */
  n.received++;
  CU_ASSERT_FALSE(status_line_due(&st, &n, t + 10, false));
  CU_ASSERT_TRUE(status_line_due(&st, &n, t += STATUS_LINE_EVERY_MS, false));
  CU_ASSERT_FALSE(status_line_due(&st, &n, t += STATUS_LINE_EVERY_MS, false));
  /* in_flight alone, and a refusal alone, count as moving. */
  n.in_flight = 3;
  CU_ASSERT_TRUE(status_line_due(&st, &n, t += STATUS_LINE_EVERY_MS, false));
  n.refused[CORE_REFUSED_RATE]++;
  CU_ASSERT_TRUE(status_line_due(&st, &n, t += STATUS_LINE_EVERY_MS, false));
  CU_ASSERT_FALSE(status_line_due(&st, &n, t += STATUS_LINE_EVERY_MS, false));
}

static void test_idle_once_an_hour(void)
{
  struct status_line st;
  struct status_counts n = { 0 };
  uint64_t t = START, logged = 0;
  unsigned lines = 0;
  status_line_start(&st, t);
  /* Two hours idle, a tick every 100 ms: the first line and one an hour. */
  for (t = START + 100; t <= START + 2 * STATUS_LINE_IDLE_EVERY_MS + STATUS_LINE_EVERY_MS; t += 100)
    if (status_line_due(&st, &n, t, false)) {
      lines++;
      CU_ASSERT(lines == 1 || t - logged >= STATUS_LINE_IDLE_EVERY_MS);
      logged = t;
    }
  CU_ASSERT_EQUAL(lines, 3);
}

static void test_forced_at_the_stop(void)
{
  struct status_line st;
  struct status_counts n = { 0 };
  status_line_start(&st, START);
  CU_ASSERT_TRUE(status_line_due(&st, &n, START + STATUS_LINE_EVERY_MS, false));
  CU_ASSERT_TRUE(status_line_due(&st, &n, START + STATUS_LINE_EVERY_MS + 1, true));
}

static void test_line_names_the_reasons(void)
{
  struct status_counts n = { .received = 5, .in_flight = 2 };
  char line[1024];
  status_line_format(&n, line, sizeof line);
  CU_ASSERT_PTR_NOT_NULL(strstr(line, "in flight 2, refused 0, receipts"));
  n.refused[CORE_REFUSED_RATE] = 898;
  n.refused[CORE_REFUSED_NO_ROUTE] = 7;
  status_line_format(&n, line, sizeof line);
  CU_ASSERT_PTR_NOT_NULL(strstr(line, "refused 905 (rate 898, no_route 7), receipts"));
  for (unsigned i = 0; i < CORE_REFUSALS; i++)
    n.refused[i] = 1;
  status_line_format(&n, line, sizeof line);
  CU_ASSERT_PTR_NOT_NULL(strstr(line, "refused 10 (rate 1, account_limit 1, credit 1, queue_full 1, "
                                      "connector_queue_full 1, no_route 1, plugin 1, too_long 1, journal 1, other 1)"));
}

void suite_status_line(void);
void suite_status_line(void)
{
  static const struct test_case cases[] = {
    { "the first line at the first look", test_first_line_after_a_look },
    { "a line only when something moved", test_only_when_something_moved },
    { "idle: a line once an hour", test_idle_once_an_hour },
    { "forced at the stop", test_forced_at_the_stop },
    { "refusals by reason in the line", test_line_names_the_reasons },
    { NULL, NULL },
  };
  test_add_suite("status_line", cases);
}
