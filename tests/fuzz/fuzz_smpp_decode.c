/* fuzz_smpp_decode.c - libFuzzer target: split, decode, and for every PDU that
 * decodes, encode it again and check the encoding decodes to the same PDU
 * (its re-encoding is byte for byte the first one).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "smpp_pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  int n = smpp_split(data, size, SMPP_MAX_PDU_DEFAULT);
  if (n <= 0)
    return 0;
  /* an exact-size copy, so reading past the PDU is caught */
  uint8_t *pdu = malloc((size_t)n);
  memcpy(pdu, data, (size_t)n);
  struct smpp_pdu p, q;
  int rc = smpp_pdu_decode(&p, pdu, (size_t)n);
  if (rc != SMPP_OK) {
    if (rc >= 0 || smpp_error_status(rc) == SMPP_ESME_RUNKNOWNERR)
      abort(); /* every error is ours and maps to a status */
    free(pdu);
    return 0;
  }
  /* a typed string TLV may gain its NUL: one octet per TLV at most */
  size_t cap = (size_t)n + SMPP_MAX_TLVS;
  uint8_t *one = malloc(cap), *two = malloc(cap);
  int len1 = smpp_pdu_encode(&p, one, cap);
  if (len1 < SMPP_HEADER_LEN)
    abort();
  if (smpp_pdu_decode(&q, one, (size_t)len1) != SMPP_OK)
    abort();
  if (q.command_id != p.command_id || q.command_status != p.command_status ||
      q.sequence_number != p.sequence_number || q.tlv.present != p.tlv.present)
    abort();
  int len2 = smpp_pdu_encode(&q, two, cap);
  if (len2 != len1 || memcmp(one, two, (size_t)len1) != 0)
    abort();
  free(two);
  free(one);
  free(pdu);
  return 0;
}
