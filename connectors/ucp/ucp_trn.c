/* ucp_trn.c - UCP transaction reference window (allocation, answers, expiry). */
#include "ucp_trn.h"

void ucp_trn_init(struct ucp_trn_window *w, unsigned window)
{
  for (unsigned i = 0; i < UCP_TRN_COUNT; i++)
    w->slot[i] = (struct ucp_trn_slot){ NULL, 0, 0 };
  w->window = window < 1 ? 1 : window > UCP_TRN_COUNT ? UCP_TRN_COUNT : window;
  w->outstanding = 0;
  w->next = 0;
}

int ucp_trn_alloc(struct ucp_trn_window *w, void *cookie, uint64_t now_ms)
{
  unsigned trn = w->next;
  if (w->outstanding >= w->window)
    return UCP_TRN_E_FULL;
  /* outstanding < 100, so a free slot exists within one turn. */
  while (w->slot[trn].busy)
    trn = (trn + 1) % UCP_TRN_COUNT;
  w->slot[trn] = (struct ucp_trn_slot){ cookie, now_ms, 1 };
  w->outstanding++;
  w->next = (trn + 1) % UCP_TRN_COUNT;
  return (int)trn;
}

int ucp_trn_answer(struct ucp_trn_window *w, int trn, void **cookie)
{
  if (trn < 0 || trn >= UCP_TRN_COUNT || !w->slot[trn].busy)
    return UCP_TRN_E_UNKNOWN;
  if (cookie)
    *cookie = w->slot[trn].cookie;
  w->slot[trn] = (struct ucp_trn_slot){ NULL, 0, 0 };
  w->outstanding--;
  return 0;
}

int ucp_trn_oldest(const struct ucp_trn_window *w, uint64_t *sent_ms)
{
  int best = UCP_TRN_E_UNKNOWN;
  for (int i = 0; i < UCP_TRN_COUNT; i++)
    if (w->slot[i].busy && (best < 0 || w->slot[i].sent_ms < w->slot[best].sent_ms))
      best = i;
  if (best >= 0)
    *sent_ms = w->slot[best].sent_ms;
  return best;
}

size_t ucp_trn_expire(struct ucp_trn_window *w, uint64_t now_ms, uint64_t timeout_ms,
                      struct ucp_trn_expired *out, size_t cap)
{
  size_t n = 0;
  uint64_t sent;
  int trn;
  /* Oldest first, so a small out[] still drains in order; at most 100 rounds. */
  while (n < cap && (trn = ucp_trn_oldest(w, &sent)) >= 0 && sent <= now_ms &&
         now_ms - sent >= timeout_ms) {
    out[n++] = (struct ucp_trn_expired){ trn, w->slot[trn].cookie, sent };
    ucp_trn_answer(w, trn, NULL);
  }
  return n;
}
