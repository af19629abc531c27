/* proto.h - how a protocol plugs into the connector runtime.
 *
 * A protocol adapter (connectors/smpp/smpp_proto.c, connectors/ucp/ucp_proto.c)
 * turns its codec's frames into protocol-neutral PDUs and back. The runtime
 * (session.c) owns everything else: windows, time-outs, keep-alives, binds,
 * reconnects. The tools and emgd speak only in struct proto_pdu.
 *
 * Adapters are pure: no I/O, no threads, no clock, no logging.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_PROTO_H
#define EMG_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "iobuf.h"
#include "msg.h"
#include "scts.h"

enum proto_op {
  PROTO_OP_NONE = 0,
  PROTO_OP_BIND,           /* SMPP bind_*, UCP op 60 */
  PROTO_OP_BIND_RESP,
  PROTO_OP_SUBMIT,         /* SMPP submit_sm / data_sm, UCP op 51 / op 01 */
  PROTO_OP_SUBMIT_RESP,
  PROTO_OP_DELIVER,        /* to the client: SMPP deliver_sm, UCP op 52 (MO) / op 53 (receipt) */
  PROTO_OP_DELIVER_RESP,
  PROTO_OP_KEEPALIVE,      /* SMPP enquire_link, UCP op 31 */
  PROTO_OP_KEEPALIVE_RESP,
  PROTO_OP_UNBIND,         /* SMPP unbind (UCP has none: the connection closes) */
  PROTO_OP_UNBIND_RESP,
  PROTO_OP_NACK,           /* SMPP generic_nack; an answer to a request we could not read */
  PROTO_OP_OTHER,          /* a request the runtime does not handle: answered "not supported" */
  /* About a message submitted before, named by msgid (the id its submit was
   * answered with) and msg.src (its sender; SMPP only): */
  PROTO_OP_QUERY,          /* SMPP query_sm */
  PROTO_OP_QUERY_RESP,     /* msgid; receipt.state (message_state), .err, .done_time (final_date) */
  PROTO_OP_CANCEL,         /* SMPP cancel_sm; msg.dst its recipient ("" = any) */
  PROTO_OP_CANCEL_RESP,
  PROTO_OP_REPLACE,        /* SMPP replace_sm: msg.deferred, .validity, .dlr_mask and the new
                              text (msg.data, in the message's own alphabet) */
  PROTO_OP_REPLACE_RESP
};

enum proto_bind_mode {
  PROTO_BIND_TX = 1,       /* may submit */
  PROTO_BIND_RX = 2,       /* receives deliveries */
  PROTO_BIND_TRX = 3       /* both; UCP sessions are always TRX */
};

/* The outcome a response carries, neutral; each adapter maps it to and from
 * its own codes (and keeps the raw code in raw_status). */
enum proto_status {
  PROTO_OK = 0,
  PROTO_E_THROTTLED,       /* too fast: back off and retry (ESME_RTHROTTLED) */
  PROTO_E_QUEUE_FULL,      /* retry later (ESME_RMSGQFUL) */
  PROTO_E_TEMPORARY,       /* other temporary failures: retry (ESME_RSYSERR, RX_T_APPN) */
  PROTO_E_PERMANENT,       /* rejected for good */
  PROTO_E_AUTH,            /* bad credentials */
  PROTO_E_BIND_STATE,      /* not bound / not allowed in this bind */
  PROTO_E_ALREADY_BOUND,
  PROTO_E_SYNTAX,          /* malformed request */
  PROTO_E_CHECKSUM,        /* UCP checksum error */
  PROTO_E_UNSUPPORTED,     /* unknown or unsupported operation */
  PROTO_E_ADDRESS,         /* invalid source or destination address */
  PROTO_E_TOO_LONG,        /* message too long */
  PROTO_E_CMD_LEN,         /* SMPP command_length invalid: answer, then close */
  PROTO_E_AUTH_ACCOUNT,    /* no such account (ESME_RINVSYSID; UCP: as PROTO_E_AUTH) */
  PROTO_E_AUTH_PASSWORD,   /* wrong password (ESME_RINVPASWD; UCP: as PROTO_E_AUTH) */
  PROTO_E_SOURCE,          /* a source address the sender may not use (ESME_RINVSRCADR; UCP 04) */
  PROTO_E_CREDIT,          /* the account's credit is used up (ESME_RSUBMITFAIL; UCP 04; HTTP 402) */
  PROTO_E_NO_MESSAGE,      /* QUERY, CANCEL, REPLACE: no such message of this client (ESME_RINVMSGID) */
  PROTO_E_MESSAGE_STATE,   /* ... the message is past what the request can do, or the request
                              failed (ESME_RQUERYFAIL, ESME_RCANCELFAIL, ESME_RREPLACEFAIL) */
  PROTO_E_WINDOW           /* BIND_RESP: the peer refuses the window the bind asked for (CIMD2
                              104, 105): bind again asking for none */
};

/* Is this outcome worth a retry of the same message? */
static inline bool proto_status_temporary(enum proto_status s)
{
  return s == PROTO_E_THROTTLED || s == PROTO_E_QUEUE_FULL || s == PROTO_E_TEMPORARY;
}

#define PROTO_TEXT_LEN 128
/* Decoded message text and UDH land here: 64 KiB of SMPP message_payload. */
#define PROTO_SCRATCH_LEN (65536 + 1024)

struct proto_pdu {
  enum proto_op op;
  uint32_t ref;                    /* SMPP sequence_number, UCP TRN */
  enum proto_status status;        /* responses: the outcome; requests: PROTO_OK */
  uint32_t raw_status;             /* the protocol's own code: command_status, UCP EC */
  char text[PROTO_TEXT_LEN];       /* system message / error detail, for logs; may be empty */

  /* BIND and BIND_RESP */
  enum proto_bind_mode bind_mode;
  char user[MSG_USER_LEN];         /* system_id, UCP OAdC of op 60 */
  char password[MSG_USER_LEN];     /* never log it */

  /* SUBMIT_RESP: the id the receiver gave the message (SMPP message_id, UCP
   * "AdC:SCTS"). DELIVER_RESP: unused. */
  char msgid[MSG_ID_LEN];

  /* SUBMIT and DELIVER: a message, or (is_receipt) a delivery report. */
  bool is_receipt;
  struct msg msg;                  /* after a decode: views, valid during the callback */
  struct msg_receipt receipt;
};

/* Protocol settings an adapter needs; zero means the default. */
struct proto_options {
  size_t max_frame;                /* largest frame accepted; 0 = the protocol's default */
  bool latin1_text;                /* UCP AMsg as Latin-1 instead of GSM 03.38 */
  /* Set by the session runtime: */
  bool smsc_side;                  /* this end accepted the connection (CIMD2 numbers its own
                                      requests even, a client's odd) */
  unsigned window;                 /* the requests this end may have outstanding (CIMD2
                                      asks for it in its login) */
};

/* What a split found: >0 a frame of that many bytes at buf; 0 need more;
 * <0 an error: drop *skip bytes and call again, or close the connection
 * when *skip is 0 (SMPP: answer generic_nack ESME_RINVCMDLEN first). */
typedef int (*proto_split_fn)(const uint8_t *buf, size_t len, const struct proto_options *opt,
                              size_t *skip);

/* Decodes one frame into *pdu. Text that needs no conversion is viewed in
 * the frame itself; converted text and built UDHs go to scratch
 * (PROTO_SCRATCH_LEN bytes). Either way the views are valid only until the
 * handler that receives the pdu returns. When split could not cut a frame
 * (skip 0), the runtime hands decode the bytes it holds, to learn the answer
 * to send before closing.
 * Returns 0, or <0 when the frame cannot be used: then pdu->op is the
 * response to answer with (NACK, SUBMIT_RESP, ...), pdu->ref its ref and
 * pdu->status / raw_status the error; op PROTO_OP_NONE means answer nothing.
 * A decoded request carries in raw_status what its answer needs (UCP: the
 * OT; SMPP: the response command_id): whoever answers a request copies ref
 * and raw_status from it into the response. A request the runtime does not
 * handle decodes as op OTHER and is answered with op OTHER and status
 * PROTO_E_UNSUPPORTED. opt is never NULL. */
typedef int (*proto_decode_fn)(struct proto_pdu *pdu, const uint8_t *frame, size_t len,
                               uint8_t *scratch, const struct proto_options *opt);

/* Appends the encoding of *pdu to out. Returns the bytes written (0 for an
 * answer the protocol does not send, e.g. to an SMPP outbind), or <0 when
 * the pdu cannot be expressed in the protocol or out cannot grow. */
typedef int (*proto_encode_fn)(const struct proto_pdu *pdu, struct iobuf *out,
                               const struct proto_options *opt);

/* For logs, in the protocol's own terms: raw_status as a response of op
 * carried it (SMPP "ESME_RTHROTTLED (0x58)", UCP "EC 04 Operation not
 * allowed"), or when raw_status is 0 the code the protocol answers op with
 * for status. Writes at most cap bytes (NUL included). */
typedef void (*proto_describe_fn)(enum proto_op op, enum proto_status status, uint32_t raw_status, char *buf,
                                  size_t cap);

struct proto_ops {
  const char *name;                /* "smpp", "ucp", "cimd2" */
  uint32_t ref_first;              /* first ref a session hands out (SMPP 1, UCP 0) */
  uint32_t ref_count;              /* refs run ref_first .. ref_first + ref_count - 1, then wrap */
  unsigned window_max;             /* most requests outstanding per direction (UCP 100) */
  bool has_unbind;                 /* SMPP unbinds; UCP just closes */
  /* An SMSC of this protocol takes a client's query, cancel and replace
   * passed on, naming the message by the SMSC's id (SMPP query_sm,
   * cancel_sm, replace_sm). */
  bool passes_about;
  /* How a server names a submitted message: SCTS_NONE, by an id of its own
   * (SMPP); else "recipient:stamp" with a time stamp of that layout, unique
   * per recipient (UCP "AdC:SCTS", CIMD2 "021:060"; scts.h). */
  enum scts_layout msgid_scts;
  proto_split_fn split;
  proto_decode_fn decode;
  proto_encode_fn encode;
  proto_describe_fn describe;
};

extern const struct proto_ops smpp_proto_ops;
extern const struct proto_ops ucp_proto_ops;
extern const struct proto_ops cimd2_proto_ops;

/* The adapter for "smpp", "ucp" or "cimd2", or NULL. */
const struct proto_ops *proto_find(const char *name);

/* The op that answers request op (BIND_RESP for BIND, ...); NONE for an
 * op that is no request. */
enum proto_op proto_response_op(enum proto_op request);

/* Name of an op / a status, for logs. */
const char *proto_op_name(enum proto_op op);
const char *proto_status_name(enum proto_status s);

/* A response's outcome for logs: in ops's terms (its describe), or for a
 * protocol without codes of its own (ops NULL: HTTP) the status in words
 * and the raw code ("throttled (503)"). Returns buf. */
const char *proto_describe(const struct proto_ops *ops, enum proto_op op, enum proto_status status,
                           uint32_t raw_status, char *buf, size_t cap);
#define PROTO_DESCRIBE_LEN 96

#endif
