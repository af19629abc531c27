/* fuzz_smpp_receipt.c - libFuzzer target: receipt text parsing, formatting
 * what was parsed and parsing that back, and message id normalisation.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "smpp_receipt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = malloc(size ? size : 1); /* exact size: over-reads are caught */
  memcpy(text, data, size);
  struct smpp_receipt r, back;
  int rc = smpp_receipt_parse(&r, text, size);
  if (rc != 0) {
    if (rc != SMPP_RECEIPT_ERR_FORMAT || r.present & (SMPP_RCPT_ID | SMPP_RCPT_STAT))
      abort();
    free(text);
    return 0;
  }
  if (r.text && (r.text < text || r.text + r.text_len > text + size))
    abort();

  if (r.present & SMPP_RCPT_ID) {
    char canon[65];
    if (smpp_msgid_canonical(canon, sizeof canon, r.id, strlen(r.id), false) < 0 ||
        smpp_msgid_canonical(canon, sizeof canon, r.id, strlen(r.id), true) < 0 ||
        !smpp_msgid_match(r.id, r.id))
      abort();
  }

  /* what the formatter writes of it reads back the same */
  if (!(r.present & SMPP_RCPT_STAT))
    r.state = SMPP_STATE_UNKNOWN;
  char out[256];
  int n = smpp_receipt_format(out, sizeof out, &r);
  if (n < 0 || smpp_receipt_parse(&back, out, (size_t)n) != 0)
    abort();
  if (back.state != r.state || strcmp(back.id, r.id) != 0 ||
      (r.present & SMPP_RCPT_SUB && back.sub != r.sub) ||
      (r.present & SMPP_RCPT_DLVRD && back.dlvrd != r.dlvrd) ||
      (r.present & SMPP_RCPT_ERR && back.err != r.err) ||
      strcmp(back.submit_date, r.submit_date) != 0 || strcmp(back.done_date, r.done_date) != 0)
    abort();
  size_t cut = r.text_len < SMPP_RECEIPT_TEXT_MAX ? r.text_len : SMPP_RECEIPT_TEXT_MAX;
  if (back.text_len != cut || (cut && memcmp(back.text, r.text, cut) != 0))
    abort();
  free(text);
  return 0;
}
