/* timerwheel.c - a timing wheel of one-tick slots, far deadlines in a heap.
 *
 * Every timer in a slot has exactly that slot's deadline: a push puts d in
 * a slot only while d <= cursor + mask, and the cursor reaches d before it
 * passes the slot's other ticks, so the slot at the cursor is due whole.
 * Far timers move into their slots as soon as the cursor brings them within
 * the span, before any push could put the same deadline there directly,
 * which keeps equal deadlines in push order.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include "timerwheel.h"

static void list_append(struct timerwheel_list *l, struct timerwheel_node *n)
{
  n->next = NULL;
  if (l->tail)
    l->tail->next = n;
  else
    l->head = n;
  l->tail = n;
}

static struct timerwheel_node *list_take(struct timerwheel_list *l)
{
  struct timerwheel_node *n = l->head;
  l->head = n->next;
  if (!l->head)
    l->tail = NULL;
  return n;
}

int timerwheel_init(struct timerwheel *w, unsigned slots_log2, uint64_t now)
{
  size_t n = (size_t)1 << slots_log2;
  w->slots = calloc(n, sizeof *w->slots);
  if (!w->slots)
    return -1;
  w->mask = n - 1;
  w->cursor = now;
  w->late = (struct timerwheel_list){ NULL, NULL };
  w->near = 0;
  timerheap_init(&w->far, 0);
  return 0;
}

void timerwheel_destroy(struct timerwheel *w)
{
  free(w->slots);
  w->slots = NULL;
  timerheap_destroy(&w->far);
}

int timerwheel_push(struct timerwheel *w, struct timerwheel_node *node, uint64_t deadline)
{
  node->deadline = deadline;
  if (deadline > w->cursor + w->mask)
    return timerheap_push(&w->far, deadline, node);
  list_append(deadline < w->cursor ? &w->late : &w->slots[deadline & w->mask], node);
  w->near++;
  return 0;
}

/* Far timers that the cursor has brought within the span, to their slots. */
static void bring_near(struct timerwheel *w)
{
  void *data;
  while (timerheap_pop_due(&w->far, w->cursor + w->mask, &data)) {
    struct timerwheel_node *n = data;
    list_append(&w->slots[n->deadline & w->mask], n);
    w->near++;
  }
}

struct timerwheel_node *timerwheel_pop_due(struct timerwheel *w, uint64_t now)
{
  if (w->late.head) {
    w->near--;
    return list_take(&w->late);
  }
  while (w->cursor <= now) {
    struct timerwheel_list *slot = &w->slots[w->cursor & w->mask];
    if (slot->head) {
      w->near--;
      return list_take(slot);
    }
    if (w->near == 0) {
      /* Nothing in the slots: jump to now, or to where the first far
       * timer comes within the span, rather than tick by tick. */
      uint64_t next = timerheap_next(&w->far), to = now + 1;
      if (next != UINT64_MAX) {
        uint64_t within = next > w->mask ? next - w->mask : 0;
        if (within < to)
          to = within;
      }
      w->cursor = to > w->cursor ? to : w->cursor + 1;
    } else {
      w->cursor++;
    }
    bring_near(w);
  }
  return NULL;
}
