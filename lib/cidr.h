/* cidr.h - address ranges ("10.0.0.0/8", "2001:db8::/32", "192.0.2.1")
 * and whether a peer falls inside one, for an account's allow_ip list.
 *
 * IPv4 and IPv6 are kept apart, except for IPv4-mapped IPv6 addresses
 * (::ffff:a.b.c.d), which are IPv4 addresses written the IPv6 way: a dual
 * stack listener reports IPv4 clients in that form. So a mapped peer is
 * matched as the IPv4 address it carries, and a range written as
 * "::ffff:a.b.c.d/N" with N >= 96 is the IPv4 range a.b.c.d/(N - 96).
 * Other IPv6 ranges never match an IPv4 peer, "::/0" included: it means
 * every IPv6 address; "0.0.0.0/0" means every IPv4 one.
 *
 * No allocation, no name lookups, no shared state: safe from any thread.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CIDR_H
#define EMG_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define CIDR_ERR_LEN 160
/* Room for cidr_format's text: an IPv6 address, '/', three digits, NUL. */
#define CIDR_TEXT_LEN 52

struct cidr {
  int family;          /* AF_INET or AF_INET6 */
  unsigned prefix;     /* leading bits that must match: 0..32 or 0..128 */
  uint8_t addr[16];    /* network order, bits past prefix cleared; IPv4 uses 4 */
};

/* Parses an address ("192.0.2.1", "::1": a range of one) or ADDRESS/PREFIX.
 * Bits set past the prefix are accepted and cleared ("10.1.2.3/8" is
 * 10.0.0.0/8), as ip(8) does; cidr_format shows the range kept. Host names,
 * zone ids ("fe80::1%eth0"), spaces and short IPv4 forms ("10/8") are
 * refused. Returns 0, or -1 with err filled (err may be NULL) in words for
 * the operator, quoting the text. */
int cidr_parse(const char *text, struct cidr *out, char *err, size_t err_len);

/* The range as text, IPv4-mapped ranges in their IPv4 form: "10.0.0.0/8". */
void cidr_format(const struct cidr *c, char *out, size_t out_len);

/* peer: emg's peer text, as net_peer_text writes it: "192.0.2.1:1234",
 * "2001:db8::1:1234" (or bracketed, "[2001:db8::1]:1234"); the port must be
 * there, since it is cut at the last ':'. False for anything that is not an
 * address (such as net_peer_text's "?:0"). */
bool cidr_match(const struct cidr *c, const char *peer);

/* The same for a socket address (AF_INET or AF_INET6; false for others). */
bool cidr_match_addr(const struct cidr *c, const struct sockaddr *sa);

/* True when peer falls in any of the n ranges; the peer is parsed once.
 * False for n == 0: an empty list allows nobody (the caller decides what
 * "no allow_ip" means). */
bool cidr_match_any(const struct cidr *list, size_t n, const char *peer);

#endif
