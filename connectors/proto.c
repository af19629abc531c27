/* proto.c - what the protocol adapters and their users share: the
 * response op of a request, and names of ops and statuses for logs. The
 * adapters by name are in proto_adapters.c, above the adapters.
 * SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "proto.h"

/* The enum constant's own spelling, so a log line can be grepped back to the code. */
#define NAME(constant) [constant] = #constant

static const char *const op_names[] = {
  NAME(PROTO_OP_NONE),          NAME(PROTO_OP_BIND),          NAME(PROTO_OP_BIND_RESP),
  NAME(PROTO_OP_SUBMIT),        NAME(PROTO_OP_SUBMIT_RESP),   NAME(PROTO_OP_DELIVER),
  NAME(PROTO_OP_DELIVER_RESP),  NAME(PROTO_OP_KEEPALIVE),     NAME(PROTO_OP_KEEPALIVE_RESP),
  NAME(PROTO_OP_UNBIND),        NAME(PROTO_OP_UNBIND_RESP),   NAME(PROTO_OP_NACK),
  NAME(PROTO_OP_OTHER),         NAME(PROTO_OP_QUERY),         NAME(PROTO_OP_QUERY_RESP),
  NAME(PROTO_OP_CANCEL),        NAME(PROTO_OP_CANCEL_RESP),   NAME(PROTO_OP_REPLACE),
  NAME(PROTO_OP_REPLACE_RESP),
};

static const char *const status_names[] = {
  NAME(PROTO_OK),               NAME(PROTO_E_THROTTLED),      NAME(PROTO_E_QUEUE_FULL),
  NAME(PROTO_E_TEMPORARY),      NAME(PROTO_E_PERMANENT),      NAME(PROTO_E_AUTH),
  NAME(PROTO_E_BIND_STATE),     NAME(PROTO_E_ALREADY_BOUND),  NAME(PROTO_E_SYNTAX),
  NAME(PROTO_E_CHECKSUM),       NAME(PROTO_E_UNSUPPORTED),    NAME(PROTO_E_ADDRESS),
  NAME(PROTO_E_TOO_LONG),       NAME(PROTO_E_CMD_LEN),
  NAME(PROTO_E_AUTH_ACCOUNT),   NAME(PROTO_E_AUTH_PASSWORD),  NAME(PROTO_E_SOURCE),
  NAME(PROTO_E_CREDIT),         NAME(PROTO_E_NO_MESSAGE),     NAME(PROTO_E_MESSAGE_STATE),
  NAME(PROTO_E_WINDOW),
};

#undef NAME

enum proto_op proto_response_op(enum proto_op request)
{
  switch (request) {
  case PROTO_OP_BIND: return PROTO_OP_BIND_RESP;
  case PROTO_OP_SUBMIT: return PROTO_OP_SUBMIT_RESP;
  case PROTO_OP_DELIVER: return PROTO_OP_DELIVER_RESP;
  case PROTO_OP_KEEPALIVE: return PROTO_OP_KEEPALIVE_RESP;
  case PROTO_OP_UNBIND: return PROTO_OP_UNBIND_RESP;
  case PROTO_OP_QUERY: return PROTO_OP_QUERY_RESP;
  case PROTO_OP_CANCEL: return PROTO_OP_CANCEL_RESP;
  case PROTO_OP_REPLACE: return PROTO_OP_REPLACE_RESP;
  default: return PROTO_OP_NONE;
  }
}

const char *proto_op_name(enum proto_op op)
{
  if ((unsigned)op < sizeof op_names / sizeof op_names[0] && op_names[op])
    return op_names[op];
  return "PROTO_OP_?";
}

const char *proto_status_name(enum proto_status s)
{
  if ((unsigned)s < sizeof status_names / sizeof status_names[0] && status_names[s])
    return status_names[s];
  return "PROTO_E_?";
}

const char *proto_describe(const struct proto_ops *ops, enum proto_op op, enum proto_status status,
                           uint32_t raw_status, char *buf, size_t cap)
{
  if (ops && ops->describe) {
    ops->describe(op, status, raw_status, buf, cap);
    return buf;
  }
  /* "PROTO_E_QUEUE_FULL" as "queue full" */
  static const char prefix[] = "PROTO_E_";
  const char *name = proto_status_name(status);
  if (strncmp(name, prefix, sizeof prefix - 1) == 0)
    name += sizeof prefix - 1;
  char words[48];
  size_t i = 0;
  for (; name[i] && i + 1 < sizeof words; i++)
    words[i] = name[i] == '_' ? ' ' : (char)tolower((unsigned char)name[i]);
  words[i] = '\0';
  if (raw_status)
    snprintf(buf, cap, "%s (%u)", words, raw_status);
  else
    snprintf(buf, cap, "%s", words);
  return buf;
}
