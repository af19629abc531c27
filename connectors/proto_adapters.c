/* proto_adapters.c - the protocol adapters by name (proto_find). Apart
 * from proto.c because it names every adapter, and the adapters use
 * proto.c: kept here, the calls go one way.
 * SPDX-License-Identifier: Apache-2.0 */
#include <string.h>
#include "proto.h"

static const struct {
  const char *name;
  const struct proto_ops *ops;
} adapters[] = {
  { "smpp", &smpp_proto_ops },
  { "ucp", &ucp_proto_ops },
  { "cimd2", &cimd2_proto_ops },
};

const struct proto_ops *proto_find(const char *name)
{
  for (size_t i = 0; i < sizeof adapters / sizeof adapters[0]; i++)
    if (strcmp(adapters[i].name, name) == 0)
      return adapters[i].ops;
  return NULL;
}
