#!/usr/bin/perl
# http_catch.pl PORTFILE OUTFILE COUNT [PORT] - a minimal HTTP listener
# (Perl core only; on PORT, else on a free one) that answers COUNT requests
# with 200 and appends each one's request line and body to OUTFILE: where a
# test points a receipt callback. With HTTP_CATCH_REPLY set, each answer
# carries that text (text/plain), as an application answering an MO. With
# HTTP_CATCH_DELAY set, each answer waits that many seconds after the
# request is recorded: a callback still in progress.
# SPDX-License-Identifier: Apache-2.0
use strict;
use warnings;
use IO::Socket::INET;

my ($portfile, $out, $count, $port) = @ARGV;
my $server = IO::Socket::INET->new(Listen => 16, LocalAddr => '127.0.0.1', LocalPort => $port // 0, ReuseAddr => 1)
    or die "listen: $!\n";
open(my $pf, '>', "$portfile.tmp") or die; print $pf $server->sockport; close $pf;
rename("$portfile.tmp", $portfile);
$SIG{ALRM} = sub { exit 1 };
alarm 600;   # a hang guard: the test that started it ends it sooner
for (1 .. $count) {
    my $c = $server->accept or last;
    my ($line, $len) = ('', 0);
    $line = <$c>;
    while (my $h = <$c>) {
        last if $h =~ /^\r?\n$/;
        $len = $1 if $h =~ /^Content-Length:\s*(\d+)/i;
    }
    my $body = '';
    read($c, $body, $len) if $len;
    open(my $o, '>>', $out) or die; print $o $line, $body, "\n"; close $o;
    sleep($ENV{HTTP_CATCH_DELAY}) if $ENV{HTTP_CATCH_DELAY};
    my $reply = $ENV{HTTP_CATCH_REPLY} // '';
    print $c "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: ",
        length($reply), "\r\nConnection: close\r\n\r\n", $reply;
    close $c;
}
