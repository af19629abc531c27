/* msg.c - the protocol-neutral message: copies and receipt states.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include "msg.h"

bool msg_addr_is_number(const char *s, size_t len)
{
  if (len && s[0] == '+') {
    s++;
    len--;
  }
  for (size_t i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return len > 0;
}

int msg_addr_set(struct msg_addr *a, const char *s, size_t len, uint8_t ton, uint8_t npi)
{
  if (len && s[0] == '+' && msg_addr_is_number(s, len)) {
    s++;
    len--;
    ton = MSG_TON_INTERNATIONAL;
    if (!npi)
      npi = 1;
  }
  if (len >= sizeof a->addr)
    return -1;
  memcpy(a->addr, s, len);
  a->addr[len] = '\0';
  a->ton = ton;
  a->npi = npi;
  return 0;
}

struct msg *msg_clone(const struct msg *m)
{
  size_t callback_len = m->callback ? strnlen(m->callback, MSG_CALLBACK_LEN - 1) : 0;
  struct msg *copy = malloc(sizeof *copy + m->udh_len + m->data_len + (m->callback ? callback_len + 1 : 0));
  if (!copy)
    return NULL;
  *copy = *m;
  uint8_t *payload = (uint8_t *)(copy + 1);
  if (m->udh_len)
    memcpy(payload, m->udh, m->udh_len);
  if (m->data_len)
    memcpy(payload + m->udh_len, m->data, m->data_len);
  copy->udh = m->udh_len ? payload : NULL;
  copy->data = payload + m->udh_len;
  if (m->callback) {
    char *callback = (char *)payload + m->udh_len + m->data_len;
    memcpy(callback, m->callback, callback_len);
    callback[callback_len] = '\0';
    copy->callback = callback;
  }
  return copy;
}

void msg_free(struct msg *m)
{
  free(m);
}

void msg_resolve_times(struct msg *m, int64_t now)
{
  if (m->validity < 0)
    m->validity = now - m->validity;
  if (m->deferred < 0)
    m->deferred = now - m->deferred;
}

int msg_state_final(uint8_t state)
{
  return state >= MSG_STATE_DELIVERED && state <= MSG_STATE_REJECTED;
}

int msg_receipt_wanted(uint8_t dlr_mask, uint8_t state)
{
  switch (state) {
  case MSG_STATE_DELIVERED:
    return (dlr_mask & MSG_DLR_DELIVERED) != 0;
  case MSG_STATE_ENROUTE:
  case MSG_STATE_ACCEPTED:
    return (dlr_mask & MSG_DLR_BUFFERED) != 0;
  case MSG_STATE_EXPIRED:
  case MSG_STATE_DELETED:
  case MSG_STATE_UNDELIVERABLE:
  case MSG_STATE_UNKNOWN:
  case MSG_STATE_REJECTED:
    return (dlr_mask & MSG_DLR_FAILED) != 0;
  case MSG_STATE_SMSC_ACCEPTED:
    return (dlr_mask & MSG_DLR_SMSC_ACCEPTED) != 0;
  case MSG_STATE_SMSC_REJECTED:
    return (dlr_mask & MSG_DLR_SMSC_REJECTED) != 0;
  default:
    return 0;
  }
}

const char *msg_state_name(uint8_t state)
{
  static const char *const names[] = { NULL, "enroute", "delivered", "expired", "deleted",
                                       "undeliverable", "accepted", "unknown", "rejected" };
  if (state == MSG_STATE_SMSC_ACCEPTED || state == MSG_STATE_SMSC_REJECTED)
    return state == MSG_STATE_SMSC_ACCEPTED ? "smsc_accepted" : "smsc_rejected";
  return state < sizeof names / sizeof names[0] ? names[state] : "unknown";
}

bool msg_concat(const struct msg *m, struct sms_text_concat *c)
{
  if (!m->udh_len || sms_text_udh_parse(m->udh, m->udh_len, c) < 0) {
    c->total = 0;
    return false;
  }
  return c->total > 0;
}
