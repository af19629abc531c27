/* test_history.c - the ring of message events: lookups in order, the ring
 * overwriting its oldest, and readers during writes seeing whole events.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "history.h"
#include "testutil.h"

/* Events of one millisecond are ordered by kind, not by when they were
 * added. The clock is coarse (a few ms) but may still tick between two adds:
 * the ring is filled again until the four events share their millisecond. */
static void test_find_in_order(void)
{
  struct history *h = NULL;
  struct history_entry e[8];
  for (int attempt = 0; attempt < 50; attempt++) {
    history_destroy(h);
    h = history_create(100);   /* rounded up to 128 */
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    history_add(h, 7, HISTORY_RECEIVED, 0, 0, 0, "load");
    history_add(h, 8, HISTORY_RECEIVED, 0, 0, 0, "load");
    history_add(h, 7, HISTORY_SENT, 1, 0, 0, "abc123");
    history_add(h, 7, HISTORY_RECEIPT, 1, 2, 0, NULL);
    history_add(h, 7, HISTORY_QUEUED, 1, 0, 0, NULL);
    CU_ASSERT_EQUAL_FATAL(history_find(h, 7, e, 8), 4);
    if (e[0].time_ms == e[3].time_ms)
      break;
  }
  CU_ASSERT_EQUAL(history_capacity(h), 128);
  CU_ASSERT_EQUAL_FATAL(e[0].time_ms, e[3].time_ms);
  CU_ASSERT_EQUAL(e[0].event, HISTORY_RECEIVED);
  CU_ASSERT_STRING_EQUAL(e[0].detail, "load");
  CU_ASSERT_EQUAL(e[1].event, HISTORY_QUEUED);
  CU_ASSERT_EQUAL(e[2].event, HISTORY_SENT);
  CU_ASSERT_EQUAL(e[2].connector, 1);
  CU_ASSERT_STRING_EQUAL(e[2].detail, "abc123");
  CU_ASSERT_EQUAL(e[3].state, 2);
  CU_ASSERT_STRING_EQUAL(e[3].detail, "");
  CU_ASSERT(e[0].time_ms <= e[3].time_ms && e[0].time_ms > 1700000000000);
  CU_ASSERT_EQUAL(history_find(h, 9, e, 8), 0);
  CU_ASSERT_EQUAL(history_find(h, 7, e, 2), 2);   /* max respected */
  CU_ASSERT_STRING_EQUAL(history_event_name(HISTORY_RECEIPT_DELIVERED), "receipt_delivered");
  CU_ASSERT_STRING_EQUAL(history_event_name(HISTORY_RECEIPT_GIVEN_UP), "receipt_given_up");
  CU_ASSERT_STRING_EQUAL(history_event_name(200), "?");
  history_destroy(h);
}

/* A recipient's messages and an SMSC's id: newest first, bounded, '+' or not. */
static void test_search(void)
{
  struct history *h = history_create(256);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  for (uint64_t id = 1; id <= 30; id++) {
    history_add(h, id, HISTORY_RECEIVED, 0, 0, 0, "load");
    history_add(h, id, HISTORY_QUEUED, 1, 0, 0, NULL);
    history_add(h, id, HISTORY_ADDRESSED, 0, 0, 0, id % 3 ? "491701234" : "491709999");
    history_add(h, id, HISTORY_SENT, 1, 0, 0, id == 17 ? "abc" : "other");
  }
  /* A recipient comes right after its receipt in the same ms (whichever of
   * the 30 messages had its four events in one: the clock may tick). */
  struct history_entry e[8];
  bool same_ms = false;
  for (uint64_t id = 1; id <= 30 && !same_ms; id++) {
    CU_ASSERT_EQUAL_FATAL(history_find(h, id, e, 8), 4);
    same_ms = e[0].time_ms == e[3].time_ms;
  }
  CU_ASSERT_FATAL(same_ms);
  CU_ASSERT_EQUAL(e[1].event, HISTORY_ADDRESSED);
  CU_ASSERT_STRING_EQUAL(history_event_name(e[1].event), "to");
  uint64_t ids[64];
  CU_ASSERT_EQUAL(history_search(h, HISTORY_SENT, "abc", ids, 8), 1);
  CU_ASSERT_EQUAL(ids[0], 17);
  CU_ASSERT_EQUAL(history_search(h, HISTORY_SENT, "ab", ids, 8), 0);   /* whole ids only */
  /* 20 of the 30 went to 491701234: the newest 8. (The admin API writes a
   * "+4917..." query as the gateway keeps addresses, without the '+'.) */
  CU_ASSERT_EQUAL_FATAL(history_search(h, HISTORY_ADDRESSED, "491701234", ids, 8), 8);
  bool newest_first = true;
  for (size_t i = 1; i < 8; i++)
    newest_first = newest_first && ids[i] != ids[i - 1] && ids[i] % 3 && ids[i - 1] % 3;
  CU_ASSERT(newest_first);
  CU_ASSERT_EQUAL(history_search(h, HISTORY_ADDRESSED, "491701234", ids, 64), 20);
  CU_ASSERT_EQUAL(history_search(h, HISTORY_ADDRESSED, "491709999", ids, 64), 10);
  CU_ASSERT_EQUAL(history_search(h, HISTORY_ADDRESSED, "49170123", ids, 64), 0);   /* whole addresses only */
  CU_ASSERT_EQUAL(history_search(h, HISTORY_RECEIVED, "491709999", ids, 64), 0);   /* that event's only */
  history_destroy(h);
}

static void test_ring_overwrites_oldest(void)
{
  struct history *h = history_create(16);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  for (uint64_t i = 1; i <= 40; i++)
    history_add(h, i, HISTORY_RECEIVED, 0, 0, 0, NULL);
  struct history_entry e[4];
  CU_ASSERT_EQUAL(history_find(h, 24, e, 4), 0);   /* gone */
  CU_ASSERT_EQUAL(history_find(h, 25, e, 4), 1);   /* the oldest still held */
  CU_ASSERT_EQUAL(history_find(h, 40, e, 4), 1);
  CU_ASSERT(history_recorded(h) >= 40 && history_recorded(h) <= 40 + 32);
  history_destroy(h);

  struct history *none = history_create(0);        /* keeps nothing, costs nothing */
  CU_ASSERT_PTR_NOT_NULL_FATAL(none);
  history_add(none, 1, HISTORY_RECEIVED, 0, 0, 0, NULL);
  CU_ASSERT_EQUAL(history_find(none, 1, e, 4), 0);
  history_destroy(none);
}

struct writer {
  struct history *h;
  uint64_t id;
};

/* Each writer's detail is its id in text: a reader that mixed two events
 * would see a detail that does not match the id. */
static void *write_many(void *arg)
{
  struct writer *w = arg;
  char detail[32];
  snprintf(detail, sizeof detail, "id-%llu", (unsigned long long)w->id);
  for (int i = 0; i < 200000; i++)
    history_add(w->h, w->id, HISTORY_SENT, (uint16_t)w->id, 0, (uint32_t)i, detail);
  return NULL;
}

static void test_readers_see_whole_events(void)
{
  struct history *h = history_create(1024);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  struct writer w[2] = { { h, 1 }, { h, 2 } };
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, write_many, &w[i]), 0);
  struct history_entry e[1024];
  unsigned bad = 0;
  for (int round = 0; round < 200; round++)
    for (uint64_t id = 1; id <= 2; id++) {
      size_t n = history_find(h, id, e, 1024);
      for (size_t k = 0; k < n; k++) {
        char want[32];
        snprintf(want, sizeof want, "id-%llu", (unsigned long long)id);
        bad += e[k].connector != id || strcmp(e[k].detail, want) != 0;
      }
    }
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  CU_ASSERT_EQUAL(bad, 0);
  /* Once quiet, the ring is (nearly) full of whole events: a slot two
   * writers met in, a lap apart, is left to neither. */
  size_t held = history_find(h, 1, e, 1024) + history_find(h, 2, e, 1024);
  CU_ASSERT(held > 900 && held <= 1024);
  CU_ASSERT(history_recorded(h) >= 400000);
  history_destroy(h);
}

void suite_history(void);
void suite_history(void)
{
  static const struct test_case cases[] = {
    { "events of one message, oldest first", test_find_in_order },
    { "the ring overwrites its oldest", test_ring_overwrites_oldest },
    { "searches: a recipient's messages, an SMSC's id", test_search },
    { "readers during writes see whole events", test_readers_see_whole_events },
    { NULL, NULL },
  };
  test_add_suite("history", cases);
}
