/* fuzz_proto.c - libFuzzer target for a protocol adapter, built once per
 * protocol (FUZZ_PROTO_OPS names its ops: smpp_proto_ops, ucp_proto_ops,
 * cimd2_proto_ops): every frame that decodes must encode again, and what is
 * encoded must decode to the same op, ref and message (or, for a query,
 * cancel or replace, the same message id); an unsupported request must be
 * answerable.
 *
 * CIMD2 (FUZZ_CIMD2) numbers packets by side: a request read keeps its
 * number as ref, and written again goes out as 2 ref + 1, so only the op is
 * compared for it; and a status report's code 0 (no meaning: unknown) is
 * written back as 3, delivery failed, which a client acts on.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "iobuf.h"
#include "proto.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t scratch_a[PROTO_SCRATCH_LEN], scratch_b[PROTO_SCRATCH_LEN];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const struct proto_ops *ops = &FUZZ_PROTO_OPS;
  const struct proto_options opt = { 0 };
  static struct proto_pdu a, b;
  size_t skip = 0;
  int n = ops->split(data, size, &opt, &skip);
  if (n <= 0) {
    /* What cannot be cut is still decoded, to learn the answer to send. */
    if (n < 0 && skip == 0)
      ops->decode(&a, data, size, scratch_a, &opt);
    return 0;
  }
  CHECK((size_t)n <= size);
  if (ops->decode(&a, data, (size_t)n, scratch_a, &opt) != 0) {
    /* An error answer must itself be encodable. */
    if (a.op != PROTO_OP_NONE) {
      struct iobuf out;
      iobuf_init(&out);
      CHECK(ops->encode(&a, &out, &opt) >= 0);
      iobuf_destroy(&out);
    }
    return 0;
  }
  struct iobuf out;
  iobuf_init(&out);
  int len = ops->encode(&a, &out, &opt);
  /* Encoding OTHER writes its answer ("not supported"), not the request. */
  CHECK(a.op != PROTO_OP_OTHER || len >= 0);
  if (len > 0 && a.op != PROTO_OP_OTHER) {
    size_t skip2 = 0;
    int m = ops->split(iobuf_head(&out), iobuf_len(&out), &opt, &skip2);
    CHECK(m == len);
    CHECK(ops->decode(&b, iobuf_head(&out), (size_t)m, scratch_b, &opt) == 0);
#ifdef FUZZ_CIMD2
    CHECK(b.op == a.op);
#else
    CHECK(b.op == a.op && b.ref == a.ref);
#endif
    if (a.op == PROTO_OP_SUBMIT || a.op == PROTO_OP_DELIVER) {
      CHECK(b.is_receipt == a.is_receipt);
      if (a.is_receipt) {
#ifdef FUZZ_CIMD2
        CHECK(b.receipt.state == a.receipt.state ||
              (a.receipt.state == MSG_STATE_UNKNOWN && b.receipt.state == MSG_STATE_UNDELIVERABLE));
        CHECK(strcmp(a.receipt.id, b.receipt.id) == 0);
#else
        CHECK(b.receipt.state == a.receipt.state);
#endif
      } else {
        CHECK(b.msg.coding == a.msg.coding && b.msg.data_len == a.msg.data_len);
        CHECK(a.msg.data_len == 0 || memcmp(a.msg.data, b.msg.data, a.msg.data_len) == 0);
        CHECK(strcmp(a.msg.dst.addr, b.msg.dst.addr) == 0);
      }
    }
    /* (an answer with an error goes as the bare header) */
    if (a.op == PROTO_OP_QUERY || a.op == PROTO_OP_CANCEL || a.op == PROTO_OP_REPLACE ||
        (a.op == PROTO_OP_QUERY_RESP && a.status == PROTO_OK)) {
      CHECK(strcmp(a.msgid, b.msgid) == 0 && strcmp(a.msg.src.addr, b.msg.src.addr) == 0);
      CHECK(a.op != PROTO_OP_QUERY_RESP || b.receipt.state == a.receipt.state);
      CHECK(a.op != PROTO_OP_REPLACE || b.msg.data_len == a.msg.data_len);
    }
  }
  iobuf_destroy(&out);
  return 0;
}
