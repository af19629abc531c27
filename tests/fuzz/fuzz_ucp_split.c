/* fuzz_ucp_split.c - libFuzzer target for ucp_split(). The first byte picks the
 * maximum frame length, the rest is a stream cut into frames the way a session
 * would; every answer must be in bounds, make progress, and a frame must be
 * STX..ETX, within the maximum, and be "need more" in any shorter prefix.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include "ucp_codec.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  size_t max_frame, pos = 1;
  if (size < 1)
    return 0;
  max_frame = UCP_FRAME_MIN + (size_t)data[0] * 4;
  while (pos < size) {
    const uint8_t *b = data + pos;
    size_t len = size - pos, n = 0, m = 0;
    int r = ucp_split(b, len, max_frame, &n);
    if (r == UCP_SPLIT_MORE) {
      CHECK(len < max_frame);
      break;
    }
    CHECK(n > 0 && n <= len);
    if (r == UCP_SPLIT_FRAME) {
      CHECK(b[0] == UCP_STX && b[n - 1] == UCP_ETX && n <= max_frame && n >= 16);
      CHECK(ucp_split(b, n - 1, max_frame, &m) == UCP_SPLIT_MORE);
      CHECK(ucp_split(b, n / 2, max_frame, &m) == UCP_SPLIT_MORE);
    } else {
      CHECK(r == UCP_E_GARBAGE || r == UCP_E_TRUNCATED || r == UCP_E_TOO_LONG || r == UCP_E_HEADER);
      /* every error resynchronises on an STX or at the end of the data */
      CHECK(n == len || b[n] == UCP_STX);
      CHECK(r == UCP_E_GARBAGE ? b[0] != UCP_STX : b[0] == UCP_STX);
    }
    pos += n;
  }
  return 0;
}
