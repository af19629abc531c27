/* ids.c - message id allocation. */
#include <stddef.h>
#include "ids.h"

void ids_init(struct ids *ids, unsigned node_id, unsigned window, uint64_t first)
{
  ids->prefix = (uint64_t)(node_id & 0xFFFF) << IDS_SEQ_BITS;
  ids->window = window ? window : 1;
  atomic_init(&ids->next, first ? first : 1);
  ids->on_window = NULL;
  ids->on_window_ctx = NULL;
}
