/* fuzz_cimd2_decode.c - libFuzzer target for the CIMD2 codec. The first byte
 * picks the largest packet, the rest is a stream cut into packets the way a
 * session would (cimd2_split) and each packet decoded. Every split answer
 * must be in bounds and make progress; a packet is STX..ETX and "need more"
 * in any shorter prefix; a packet that decodes is encoded again and must
 * decode to the same operation, number and parameters; its text (033), when
 * it reads as GSM, must be written and read back to the same septets.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "cimd2_codec.h"
#include "cimd2_text.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

static void text_round_trip(const struct cimd2_packet *p)
{
  static uint8_t septets[CIMD2_FRAME_MAX], again[CIMD2_FRAME_MAX];
  static char text[3 * CIMD2_FRAME_MAX];
  const struct cimd2_slice *s = cimd2_get(p, CIMD2_P_TEXT);
  if (!s)
    return;
  int n = cimd2_text_decode(septets, sizeof septets, s->p, s->len);
  CHECK(n == CIMD2_E_INVALID || (n >= 0 && (size_t)n <= s->len));
  if (n < 0)
    return;
  int len = cimd2_text_encode(text, sizeof text, septets, (size_t)n);
  CHECK(len >= 0 && (size_t)len <= 3 * (size_t)n);
  CHECK(cimd2_text_decode(again, sizeof again, text, (size_t)len) == n && memcmp(again, septets, (size_t)n) == 0);
}

static void round_trip(const struct cimd2_packet *p)
{
  text_round_trip(p);
  static uint8_t out[CIMD2_FRAME_MAX + 16];
  struct cimd2_packet back;
  int n = cimd2_encode(p, out, sizeof out);
  if (n == CIMD2_E_SPACE)
    return;   /* a decoded packet within the bound re-encodes within it, but the checksum may add 2 */
  CHECK(n > 0);
  CHECK(cimd2_decode(out, (size_t)n, &back) == 0);
  CHECK(back.op == p->op && back.number == p->number && back.checksum == p->checksum &&
        back.n_params == p->n_params);
  for (unsigned i = 0; i < p->n_params; i++)
    CHECK(back.params[i].code == p->params[i].code && back.params[i].value.len == p->params[i].value.len &&
          memcmp(back.params[i].value.p, p->params[i].value.p, p->params[i].value.len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  size_t max_frame = CIMD2_FRAME_MIN + (size_t)data[0] * 16, pos = 1;
  while (pos < size) {
    const uint8_t *b = data + pos;
    size_t len = size - pos, skip = 0, m = 0;
    int r = cimd2_split(b, len, max_frame, &skip);
    if (r == 0) {
      CHECK(len < max_frame);
      break;
    }
    if (r > 0) {
      size_t n = (size_t)r;
      CHECK(n <= len && n <= max_frame && n >= CIMD2_FRAME_MIN && b[0] == CIMD2_STX && b[n - 1] == CIMD2_ETX);
      CHECK(cimd2_split(b, n - 1, max_frame, &m) == 0);
      struct cimd2_packet p;
      int d = cimd2_decode(b, n, &p);
      CHECK(d == 0 || d == CIMD2_E_CHECKSUM || d == CIMD2_E_SYNTAX || d == CIMD2_E_HEADER);
      if (d == 0)
        round_trip(&p);
      pos += n;
      continue;
    }
    CHECK(r == CIMD2_E_GARBAGE || r == CIMD2_E_TRUNCATED || r == CIMD2_E_TOO_LONG || r == CIMD2_E_HEADER);
    CHECK(skip > 0 && skip <= len);
    /* every error resynchronises on an STX or at the end of the data */
    CHECK(skip == len || b[skip] == CIMD2_STX);
    CHECK(r == CIMD2_E_GARBAGE ? b[0] != CIMD2_STX : b[0] == CIMD2_STX);
    pos += skip;
  }
  return 0;
}
