/* test_cidr.c - address ranges: parsing, the operator's error messages, and
 * matching emg's peer text and socket addresses, mapped IPv4 included.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "cidr.h"
#include "netutil.h"
#include "testutil.h"

/* text parses, and is kept as want (cidr_format's text). */
static void parses_as(const char *text, const char *want)
{
  struct cidr c;
  char err[CIDR_ERR_LEN] = "", got[CIDR_TEXT_LEN] = "";
  int rc = cidr_parse(text, &c, err, sizeof err);
  CU_ASSERT_EQUAL(rc, 0);
  if (rc != 0) {
    printf("\n  '%s' refused: %s\n", text, err);
    return;
  }
  cidr_format(&c, got, sizeof got);
  if (strcmp(got, want) != 0)
    printf("\n  '%s' kept as %s, expected %s\n", text, got, want);
  CU_ASSERT_STRING_EQUAL(got, want);
}

/* text is refused, with a message containing each of the given pieces. */
static void refused(const char *text, const char *piece1, const char *piece2)
{
  struct cidr c;
  char err[CIDR_ERR_LEN] = "";
  CU_ASSERT_EQUAL(cidr_parse(text, &c, err, sizeof err), -1);
  bool ok = strstr(err, piece1) && (!piece2 || strstr(err, piece2));
  if (!ok)
    printf("\n  '%s': message \"%s\" lacks \"%s\"%s%s\n", text ? text : "(null)", err, piece1,
           piece2 ? " or " : "", piece2 ? piece2 : "");
  CU_ASSERT(ok);
}

/* range contains peer (emg's peer text) or not. */
static void check(const char *range, const char *peer, bool want)
{
  struct cidr c;
  char err[CIDR_ERR_LEN];
  CU_ASSERT_EQUAL_FATAL(cidr_parse(range, &c, err, sizeof err), 0);
  bool got = cidr_match(&c, peer);
  if (got != want)
    printf("\n  %s against %s: %s, expected %s\n", range, peer, got ? "match" : "no match",
           want ? "match" : "no match");
  CU_ASSERT_EQUAL(got, want);
}

static void test_parse(void)
{
  parses_as("192.0.2.1", "192.0.2.1/32");
  parses_as("10.0.0.0/8", "10.0.0.0/8");
  parses_as("0.0.0.0/0", "0.0.0.0/0");
  parses_as("255.255.255.255/32", "255.255.255.255/32");
  parses_as("2001:db8::/32", "2001:db8::/32");
  parses_as("::1", "::1/128");
  parses_as("::/0", "::/0");
  parses_as("2001:DB8::/32", "2001:db8::/32");
  parses_as("10.0.0.0/08", "10.0.0.0/8");
  parses_as("2001:db8:0:0:0:0:0:1/128", "2001:db8::1/128");
}

/* Bits past the prefix are accepted and cleared. */
static void test_host_bits_masked(void)
{
  parses_as("10.1.2.3/8", "10.0.0.0/8");
  parses_as("192.0.2.255/25", "192.0.2.128/25");
  parses_as("192.0.2.255/31", "192.0.2.254/31");
  parses_as("255.255.255.255/0", "0.0.0.0/0");
  parses_as("255.255.255.255/1", "128.0.0.0/1");
  parses_as("2001:db8:ffff::1/32", "2001:db8::/32");
  parses_as("2001:db8::ffff/127", "2001:db8::fffe/127");
  parses_as("ffff:ffff::/0", "::/0");
}

/* ::ffff:a.b.c.d with a prefix of 96 or more is the IPv4 range; below
 * that it stays IPv6. */
static void test_parse_mapped(void)
{
  parses_as("::ffff:192.0.2.0/120", "192.0.2.0/24");
  parses_as("::ffff:192.0.2.1", "192.0.2.1/32");
  parses_as("::ffff:192.0.2.1/128", "192.0.2.1/32");
  parses_as("::ffff:c000:201/128", "192.0.2.1/32");
  parses_as("::ffff:10.9.9.9/104", "10.0.0.0/8");
  parses_as("::ffff:0.0.0.0/96", "0.0.0.0/0");
  parses_as("::ffff:0:0/95", "::fffe:0:0/95");
  parses_as("::ffff:192.0.2.0/80", "::/80");
}

static void test_parse_errors(void)
{
  refused(NULL, "empty", NULL);
  refused("", "empty", "10.0.0.0/8");
  refused("10.0.0.0/33", "'10.0.0.0/33'", "more than 32, the most for an IPv4 address");
  refused("10.0.0.0/99999999999999999999", "more than 32", NULL);
  refused("2001:db8::/129", "more than 128, the most for an IPv6 address", NULL);
  refused("::ffff:192.0.2.0/129", "more than 128", NULL);
  refused("10.0.0.0/", "no prefix length", NULL);
  refused("/8", "no address", NULL);
  refused("10.0.0.0/-1", "a number from 0 to 32", NULL);
  refused("10.0.0.0/+8", "a number from 0 to 32", NULL);
  refused("10.0.0.0/ 8", "a number from 0 to 32", NULL);
  refused("10.0.0.0/8/9", "a number from 0 to 32", NULL);
  refused("2001:db8::/x", "a number from 0 to 128", NULL);
  refused("10.0.0.256", "'10.0.0.256' is not an IPv4 or IPv6 address", NULL);
  refused("10.0.0", "not an IPv4 or IPv6 address", NULL);
  refused("10/8", "not an IPv4 or IPv6 address", NULL);
  refused("010.0.0.1", "not an IPv4 or IPv6 address", NULL);
  refused("gateway.example.com", "host names are not accepted", NULL);
  refused("localhost/8", "host names are not accepted", NULL);
  refused(" 10.0.0.1", "white space", NULL);
  refused("10.0.0.1 ", "white space", NULL);
  refused("fe80::1%eth0", "zone ids", NULL);
  refused("[2001:db8::1]", "without brackets", NULL);
  refused("2001:db8:::1", "not an IPv4 or IPv6 address", NULL);
  refused("2001:db8::g", "not an IPv4 or IPv6 address", NULL);
  refused("1:2:3:4:5:6:7:8:9", "not an IPv4 or IPv6 address", NULL);
  refused("0000:0000:0000:0000:0000:0000:0000:0000:0000:0000/8", "too long", NULL);

  /* A long text is quoted cut, within the buffer; a short buffer still
   * gets a terminated message; err may be NULL. */
  char longtext[300];
  memset(longtext, '1', sizeof longtext - 1);
  longtext[sizeof longtext - 1] = '\0';
  refused(longtext, "too long", NULL);
  struct cidr c;
  char small[8];
  CU_ASSERT_EQUAL(cidr_parse("bogus", &c, small, sizeof small), -1);
  CU_ASSERT_EQUAL(strlen(small), sizeof small - 1);
  CU_ASSERT_EQUAL(cidr_parse("bogus", &c, NULL, 0), -1);
}

static void test_match_v4(void)
{
  check("192.0.2.1", "192.0.2.1:1234", true);
  check("192.0.2.1", "192.0.2.2:1234", false);
  check("192.0.2.1/32", "192.0.2.1:0", true);
  check("10.0.0.0/8", "10.0.0.0:1", true);
  check("10.0.0.0/8", "10.255.255.255:1", true);
  check("10.0.0.0/8", "11.0.0.0:1", false);
  check("10.0.0.0/8", "9.255.255.255:1", false);
  check("192.0.2.128/25", "192.0.2.128:1", true);
  check("192.0.2.128/25", "192.0.2.255:1", true);
  check("192.0.2.128/25", "192.0.2.127:1", false);
  check("192.0.2.0/31", "192.0.2.1:1", true);
  check("192.0.2.0/31", "192.0.2.2:1", false);
  check("0.0.0.0/0", "203.0.113.9:65535", true);
  check("0.0.0.0/0", "0.0.0.0:1", true);
  check("128.0.0.0/1", "127.255.255.255:1", false);
  check("128.0.0.0/1", "128.0.0.0:1", true);
  check("10.1.2.3/8", "10.200.0.1:1", true);  /* host bits were cleared */
  /* IPv4 ranges never take IPv6 peers. */
  check("0.0.0.0/0", "2001:db8::1:1234", false);
  check("0.0.0.0/0", "::1:1234", false);
}

static void test_match_v6(void)
{
  /* emg's own form (net_peer_text: no brackets) and the bracketed one. */
  check("2001:db8::/32", "2001:db8::1:1234", true);
  check("2001:db8::/32", "[2001:db8::1]:1234", true);
  check("2001:db8::/32", "2001:db9::1:1234", false);
  check("2001:db8::/32", "[2001:db7:ffff:ffff:ffff:ffff:ffff:ffff]:1", false);
  check("2001:db8::/32", "[2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]:1", true);
  check("::1", "::1:1234", true);
  check("::1", "[::1]:1234", true);
  check("::1", "::2:1234", false);
  check("::1/128", "[::1]:1", true);
  check("2001:db8::/127", "[2001:db8::1]:1", true);
  check("2001:db8::/127", "[2001:db8::2]:1", false);
  check("2001:db8::8000/113", "[2001:db8::ffff]:1", true);
  check("2001:db8::8000/113", "[2001:db8::7fff]:1", false);
  check("::/0", "[2001:db8::1]:1", true);
  check("::/0", "[::]:1", true);
  /* IPv6 ranges never take IPv4 peers, ::/0 included. */
  check("::/0", "192.0.2.1:1", false);
  check("::/0", "[::ffff:192.0.2.1]:1", false);
  check("::ffff:0:0/95", "192.0.2.1:1", false);
}

/* An IPv4-mapped peer is its IPv4 address; a mapped range is an IPv4 range. */
static void test_match_mapped(void)
{
  check("192.0.2.0/24", "::ffff:192.0.2.1:1234", true);
  check("192.0.2.0/24", "[::ffff:192.0.2.1]:1234", true);
  check("192.0.2.0/24", "[::ffff:c000:201]:1234", true);
  check("192.0.2.0/24", "[::ffff:192.0.3.1]:1234", false);
  check("192.0.2.1", "[::ffff:192.0.2.1]:1", true);
  check("0.0.0.0/0", "[::ffff:0.0.0.0]:1", true);
  check("::ffff:192.0.2.0/120", "192.0.2.77:1", true);
  check("::ffff:192.0.2.0/120", "192.0.3.77:1", false);
  check("::ffff:192.0.2.0/120", "[::ffff:192.0.2.77]:1", true);
  check("::ffff:192.0.2.1", "192.0.2.1:1", true);
  check("::ffff:0.0.0.0/96", "198.51.100.1:1", true);
  check("::ffff:0.0.0.0/96", "[2001:db8::1]:1", false);
  /* Not mapped: IPv4-compatible (::a.b.c.d) and NAT64 are IPv6. */
  check("192.0.2.0/24", "[::192.0.2.1]:1", false);
  check("192.0.2.0/24", "[64:ff9b::192.0.2.1]:1", false);
}

static void test_match_bad_peer(void)
{
  struct cidr all4, all6;
  CU_ASSERT_EQUAL_FATAL(cidr_parse("0.0.0.0/0", &all4, NULL, 0), 0);
  CU_ASSERT_EQUAL_FATAL(cidr_parse("::/0", &all6, NULL, 0), 0);
  const char *bad[] = { NULL, "", ":", "?:0", "[]:1", "localhost:80", "192.0.2.1 :1",
                        "192.0.2.1/24:1", "[fe80::1%eth0]:1", "[" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CU_ASSERT_FALSE(cidr_match(&all4, bad[i]));
    CU_ASSERT_FALSE(cidr_match(&all6, bad[i]));
  }
  char longpeer[200];
  memset(longpeer, '1', sizeof longpeer - 1);
  longpeer[sizeof longpeer - 1] = '\0';
  CU_ASSERT_FALSE(cidr_match(&all4, longpeer));
}

/* The peers net_peer_text writes for socket addresses match as the
 * addresses themselves do. */
static void test_match_addr(void)
{
  struct cidr net4, net6, mapped;
  CU_ASSERT_EQUAL_FATAL(cidr_parse("192.0.2.0/24", &net4, NULL, 0), 0);
  CU_ASSERT_EQUAL_FATAL(cidr_parse("2001:db8::/32", &net6, NULL, 0), 0);
  CU_ASSERT_EQUAL_FATAL(cidr_parse("::ffff:198.51.100.0/120", &mapped, NULL, 0), 0);

  struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(2775) };
  struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(2775) };
  struct sockaddr_in6 in6map = in6;
  inet_pton(AF_INET, "192.0.2.9", &in.sin_addr);
  inet_pton(AF_INET6, "2001:db8::9", &in6.sin6_addr);
  inet_pton(AF_INET6, "::ffff:198.51.100.9", &in6map.sin6_addr);
  const struct sockaddr *sa[] = { (struct sockaddr *)&in, (struct sockaddr *)&in6,
                                  (struct sockaddr *)&in6map };
  const struct cidr *nets[] = { &net4, &net6, &mapped };
  for (size_t s = 0; s < 3; s++) {
    char peer[64];
    net_peer_text(sa[s], peer, sizeof peer);
    for (size_t n = 0; n < 3; n++) {
      CU_ASSERT_EQUAL(cidr_match_addr(nets[n], sa[s]), s == n);
      CU_ASSERT_EQUAL(cidr_match(nets[n], peer), s == n);
    }
  }
  /* 198.51.100.9 as plain IPv4 is in the mapped range too. */
  inet_pton(AF_INET, "198.51.100.9", &in.sin_addr);
  CU_ASSERT_TRUE(cidr_match_addr(&mapped, (struct sockaddr *)&in));
  struct sockaddr other = { .sa_family = AF_UNIX };
  CU_ASSERT_FALSE(cidr_match_addr(&net4, &other));
  CU_ASSERT_FALSE(cidr_match_addr(&net4, NULL));
}

static void test_match_any(void)
{
  struct cidr list[3];
  CU_ASSERT_EQUAL_FATAL(cidr_parse("10.0.0.0/8", &list[0], NULL, 0), 0);
  CU_ASSERT_EQUAL_FATAL(cidr_parse("2001:db8::/32", &list[1], NULL, 0), 0);
  CU_ASSERT_EQUAL_FATAL(cidr_parse("192.0.2.7", &list[2], NULL, 0), 0);
  CU_ASSERT_TRUE(cidr_match_any(list, 3, "10.1.1.1:5"));
  CU_ASSERT_TRUE(cidr_match_any(list, 3, "2001:db8::5:5"));
  CU_ASSERT_TRUE(cidr_match_any(list, 3, "::ffff:192.0.2.7:5"));
  CU_ASSERT_FALSE(cidr_match_any(list, 3, "192.0.2.8:5"));
  CU_ASSERT_FALSE(cidr_match_any(list, 3, "garbage"));
  CU_ASSERT_FALSE(cidr_match_any(list, 0, "10.1.1.1:5"));
}

/* Every prefix length of an address against the addresses one bit either
 * side of the boundary: exactly the prefix decides. */
static void test_every_prefix(void)
{
  unsigned wrong = 0;
  for (unsigned v6 = 0; v6 < 2; v6++) {
    unsigned bits = v6 ? 128 : 32, bytes = bits / 8;
    for (unsigned prefix = 0; prefix <= bits; prefix++) {
      char text[CIDR_TEXT_LEN];
      snprintf(text, sizeof text, "%s/%u", v6 ? "2001:db8:aaaa:5555:aaaa:5555:aaaa:5555"
               : "170.85.170.85", prefix);
      struct cidr c;
      if (cidr_parse(text, &c, NULL, 0) != 0) {
        wrong++;
        continue;
      }
      /* Flip each bit of the network's first address in turn. */
      for (unsigned bit = 0; bit < bits; bit++) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        ss.ss_family = v6 ? AF_INET6 : AF_INET;
        uint8_t *addr = v6 ? ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr
                           : (uint8_t *)&((struct sockaddr_in *)&ss)->sin_addr;
        memcpy(addr, c.addr, bytes);
        addr[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
        wrong += cidr_match_addr(&c, (struct sockaddr *)&ss) != (bit >= prefix);
      }
    }
  }
  CU_ASSERT_EQUAL(wrong, 0);
}

void suite_cidr(void);
void suite_cidr(void)
{
  static const struct test_case cases[] = {
    { "parse", test_parse },
    { "host bits are cleared", test_host_bits_masked },
    { "mapped ranges are IPv4", test_parse_mapped },
    { "errors for the operator", test_parse_errors },
    { "match IPv4", test_match_v4 },
    { "match IPv6", test_match_v6 },
    { "match mapped IPv4", test_match_mapped },
    { "peers that are not addresses", test_match_bad_peer },
    { "match socket addresses", test_match_addr },
    { "match any of a list", test_match_any },
    { "every prefix length", test_every_prefix },
    { NULL, NULL },
  };
  test_add_suite("cidr", cases);
}
