/* cidr.c - address ranges and peer matching; see cidr.h.
 * SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cidr.h"
#include "netutil.h"

/* The first 96 bits of an IPv4-mapped IPv6 address, ::ffff:0:0/96. */
static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static int fail(char *err, size_t err_len, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
  if (err && err_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Turns a range or address inside ::ffff:0:0/96 into its IPv4 form, so that
 * mapped and plain IPv4 compare as one family; then clears the bits past the
 * prefix. */
static void normalise(struct cidr *c)
{
  if (c->family == AF_INET6 && c->prefix >= 96 && memcmp(c->addr, v4mapped, 12) == 0) {
    memmove(c->addr, c->addr + 12, 4);
    memset(c->addr + 4, 0, 12);
    c->family = AF_INET;
    c->prefix -= 96;
  }
  unsigned bytes = c->family == AF_INET ? 4 : 16;
  for (unsigned i = 0; i < bytes; i++) {
    unsigned keep = c->prefix > i * 8 ? c->prefix - i * 8 : 0;
    if (keep < 8)
      c->addr[i] &= (uint8_t)(0xff00u >> keep);
  }
}

/* An address alone, as a full-length range (/32 or /128), normalised. */
static bool parse_addr(const char *text, struct cidr *out)
{
  memset(out, 0, sizeof *out);
  if (inet_pton(AF_INET, text, out->addr) == 1) {
    out->family = AF_INET;
    out->prefix = 32;
  } else if (inet_pton(AF_INET6, text, out->addr) == 1) {
    out->family = AF_INET6;
    out->prefix = 128;
  } else {
    return false;
  }
  normalise(out);
  return true;
}

/* What is wrong with text that inet_pton refused, as a hint for the operator. */
static const char *addr_hint(const char *text)
{
  if (strpbrk(text, " \t\r\n"))
    return "it contains white space";
  if (strchr(text, '%'))
    return "zone ids such as %eth0 are not accepted";
  if (text[0] == '[')
    return "write IPv6 addresses without brackets";
  if (!strchr(text, ':') && strpbrk(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"))
    return "host names are not accepted, only addresses";
  return "expected a form such as 192.0.2.1, 10.0.0.0/8 or 2001:db8::/32";
}

int cidr_parse(const char *text, struct cidr *out, char *err, size_t err_len)
{
  char host[INET6_ADDRSTRLEN];
  if (!text || !*text)
    return fail(err, err_len, "empty address range: expected an address such as 192.0.2.1, "
                "or a range such as 10.0.0.0/8 or 2001:db8::/32");
  const char *slash = strchr(text, '/');
  size_t len = slash ? (size_t)(slash - text) : strlen(text);
  if (len == 0)
    return fail(err, err_len, "'%.64s': no address before the '/'", text);
  if (len >= sizeof host)
    return fail(err, err_len, "'%.64s%s': too long for an IPv4 or IPv6 address", text,
                strlen(text) > 64 ? "..." : "");
  memcpy(host, text, len);
  host[len] = '\0';
  /* The family as written: ::ffff:a.b.c.d takes an IPv6 prefix (0..128),
   * and is made IPv4 only once the prefix says the range lies within
   * ::ffff:0:0/96. */
  struct cidr c;
  memset(&c, 0, sizeof c);
  c.family = strchr(host, ':') ? AF_INET6 : AF_INET;
  if (inet_pton(c.family, host, c.addr) != 1)
    return fail(err, err_len, "'%.64s' is not an IPv4 or IPv6 address: %s", host, addr_hint(host));
  const char *family = c.family == AF_INET ? "IPv4" : "IPv6";
  unsigned max = c.family == AF_INET ? 32 : 128;
  c.prefix = max;
  if (slash) {
    const char *p = slash + 1;
    if (!*p)
      return fail(err, err_len, "'%.64s': no prefix length after the '/'", text);
    unsigned long v = 0;
    for (const char *d = p; *d; d++) {
      if (*d < '0' || *d > '9')
        return fail(err, err_len, "'%.64s': the prefix length after the '/' must be a number "
                    "from 0 to %u", text, max);
      v = v * 10 + (unsigned long)(*d - '0');
      if (v > 1000)
        v = 1000;  /* too long already; keeps the sum from wrapping */
    }
    if (v > max)
      return fail(err, err_len, "'%.64s': prefix length %.12s is more than %u, the most for an "
                  "%s address", text, p, max, family);
    c.prefix = (unsigned)v;
  }
  normalise(&c);
  *out = c;
  return 0;
}

void cidr_format(const struct cidr *c, char *out, size_t out_len)
{
  char host[INET6_ADDRSTRLEN] = "?";
  inet_ntop(c->family, c->addr, host, sizeof host);
  snprintf(out, out_len, "%s/%u", host, c->prefix);
}

/* a (a single address, normalised) lies within range c. */
static bool within(const struct cidr *c, const struct cidr *a)
{
  if (c->family != a->family)
    return false;
  unsigned full = c->prefix / 8, rest = c->prefix % 8;
  if (memcmp(c->addr, a->addr, full) != 0)
    return false;
  return rest == 0 || (a->addr[full] & (uint8_t)(0xff00u >> rest)) == c->addr[full];
}

/* The address part of emg's peer text, as a full-length range. */
static bool parse_peer(const char *peer, struct cidr *a)
{
  char host[INET6_ADDRSTRLEN];
  const char *h;
  if (!peer)
    return false;
  size_t len = net_peer_host(peer, &h);
  if (len == 0 || len >= sizeof host)
    return false;
  memcpy(host, h, len);
  host[len] = '\0';
  return parse_addr(host, a);
}

bool cidr_match(const struct cidr *c, const char *peer)
{
  struct cidr a;
  return parse_peer(peer, &a) && within(c, &a);
}

bool cidr_match_any(const struct cidr *list, size_t n, const char *peer)
{
  struct cidr a;
  if (n == 0 || !parse_peer(peer, &a))
    return false;
  for (size_t i = 0; i < n; i++)
    if (within(&list[i], &a))
      return true;
  return false;
}

bool cidr_match_addr(const struct cidr *c, const struct sockaddr *sa)
{
  struct cidr a;
  memset(&a, 0, sizeof a);
  if (!sa)
    return false;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    memcpy(a.addr, &in->sin_addr, 4);
    a.family = AF_INET;
    a.prefix = 32;
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    memcpy(a.addr, &in6->sin6_addr, 16);
    a.family = AF_INET6;
    a.prefix = 128;
    normalise(&a);
  } else {
    return false;
  }
  return within(c, &a);
}
