/* fuzz_smpp_split.c - libFuzzer target: the SMPP splitter walked over a byte
 * stream the way a session does, under limits big and small.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include "smpp_pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits the whole stream, checking each answer against the header. */
static void walk(const uint8_t *data, size_t size, size_t max_pdu)
{
  while (size > 0) {
    int n = smpp_split(data, size, max_pdu);
    if (n == 0) { /* need more: only when the PDU is not all here */
      if (size >= 4 && ((size_t)data[0] << 24 | (size_t)data[1] << 16 | (size_t)data[2] << 8 | data[3]) <= size)
        abort();
      return;
    }
    if (n < 0) {
      if (n != SMPP_ERR_CMD_LEN || size < 4)
        abort();
      return;
    }
    if ((size_t)n > size || (size_t)n > max_pdu || n < SMPP_HEADER_LEN)
      abort();
    data += n;
    size -= (size_t)n;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  walk(data, size, SMPP_MAX_PDU_DEFAULT);
  walk(data, size, 64);
  walk(data, size, SMPP_HEADER_LEN);
  return 0;
}
