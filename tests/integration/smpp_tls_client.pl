#!/usr/bin/perl
# smpp_tls_client.pl HOST:PORT CA SYSTEM_ID PASSWORD COUNT [CERT KEY]
#
# An SMPP client over TLS that is not ours: Perl's IO::Socket::SSL (on
# OpenSSL through Net::SSLeay) for the TLS, each PDU packed here by hand
# from SMPP 3.4. It verifies the server's certificate against CA and the
# name "localhost", presents CERT/KEY when given, binds as a transceiver,
# submits COUNT messages and unbinds. Prints one line:
#   handshake=ok|failed bind=STATUS submitted=N ok=N [error=...]
# STATUS is the bind_transceiver_resp's command_status in hex, or "none".
# SPDX-License-Identifier: Apache-2.0
use strict;
use warnings;
use IO::Socket::SSL;

my ($addr, $ca, $user, $password, $count, $cert, $key) = @ARGV;
die "usage: $0 HOST:PORT CA SYSTEM_ID PASSWORD COUNT [CERT KEY]\n" unless defined $count;
my ($host, $port) = split /:/, $addr;

my %tls = (
  PeerHost => $host, PeerPort => $port, Timeout => 10,
  SSL_verify_mode => SSL_VERIFY_PEER, SSL_ca_file => $ca,
  SSL_verifycn_name => 'localhost', SSL_verifycn_scheme => 'default', SSL_hostname => 'localhost',
);
if ($cert) {
  $tls{SSL_cert_file} = $cert;
  $tls{SSL_key_file} = $key;
}
my $sock = IO::Socket::SSL->new(%tls);
unless ($sock) {
  print "handshake=failed bind=none submitted=0 ok=0 error=", ($SSL_ERROR || $!), "\n";
  exit 0;
}

my $seq = 0;
sub send_pdu {
  my ($id, $body) = @_;
  $seq++;
  print $sock pack('NNNN', 16 + length $body, $id, 0, $seq) . $body;
  $sock->flush;
}

# The next PDU from the server, answering an enquire_link or deliver_sm on
# the way; (command_id, status, sequence, body), or () when it closed.
sub read_pdu {
  while (1) {
    my $head = '';
    while (length $head < 16) {
      my $n = sysread($sock, my $chunk, 16 - length $head);
      return () unless $n;
      $head .= $chunk;
    }
    my ($len, $id, $status, $s) = unpack 'NNNN', $head;
    my $body = '';
    while (length $body < $len - 16) {
      my $n = sysread($sock, my $chunk, $len - 16 - length $body);
      return () unless $n;
      $body .= $chunk;
    }
    if ($id == 0x00000015) {   # enquire_link
      print $sock pack('NNNN', 16, 0x80000015, 0, $s);
      next;
    }
    if ($id == 0x00000005) {   # deliver_sm: an empty message_id answers it
      print $sock pack('NNNN', 17, 0x80000005, 0, $s) . "\0";
      next;
    }
    return ($id, $status, $s, $body);
  }
}

# bind_transceiver: system_id, password, system_type, version 0x34, ton, npi, range
send_pdu(0x00000009, pack('Z*Z*Z*CCCZ*', $user, $password, '', 0x34, 0, 0, ''));
my ($id, $status) = read_pdu();
unless (defined $id && $id == 0x80000009 && $status == 0) {
  printf "handshake=ok bind=%s submitted=0 ok=0\n", defined $status ? sprintf('0x%08x', $status) : 'none';
  exit 0;
}

my $ok = 0;
for my $i (1 .. $count) {
  my $text = "perl over TLS $i";
  # service_type, source ton/npi/addr, dest ton/npi/addr, esm_class, protocol_id,
  # priority, schedule, validity, registered_delivery, replace, data_coding,
  # sm_default_msg_id, sm_length, short_message
  send_pdu(0x00000004, pack('Z*CCZ*CCZ*CCCZ*Z*CCCCC', '', 1, 1, '4915100000001', 1, 1,
                            sprintf('49170%08d', $i), 0, 0, 0, '', '', 0, 0, 0, 0, length $text) . $text);
  my ($rid, $rstatus) = read_pdu();
  $ok++ if defined $rid && $rid == 0x80000004 && $rstatus == 0;
}
send_pdu(0x00000006, '');
read_pdu();
printf "handshake=ok bind=0x%08x submitted=%d ok=%d\n", 0, $count, $ok;
