#!/usr/bin/perl
# http_catch.pl PORTFILE OUTFILE COUNT [PORT] - a minimal HTTP listener
# (Perl core only; on PORT, else on a free one) that answers COUNT requests
# with 200 and appends each one's request line and body to OUTFILE: where a
# test points a receipt callback. With HTTP_CATCH_REPLY set, each answer
# carries that text (text/plain), as an application answering an MO. With
# HTTP_CATCH_DELAY set, each answer waits that many seconds after the
# request is recorded: a callback still in progress. HTTP_CATCH_STATUS
# ("503,503,200") gives the status of the first answers in turn (the rest
# are 200), and HTTP_CATCH_TIMES names a file that gets each request's
# arrival, in ms since the epoch, one a line.
# SPDX-License-Identifier: Apache-2.0
use strict;
use warnings;
use IO::Socket::INET;
use Time::HiRes qw(time);

my ($portfile, $out, $count, $port) = @ARGV;
my $server = IO::Socket::INET->new(Listen => 16, LocalAddr => '127.0.0.1', LocalPort => $port // 0, ReuseAddr => 1)
    or die "listen: $!\n";
open(my $pf, '>', "$portfile.tmp") or die; print $pf $server->sockport; close $pf;
rename("$portfile.tmp", $portfile);
$SIG{ALRM} = sub { exit 1 };
alarm 600;   # a hang guard: the test that started it ends it sooner
my @status = split /,/, $ENV{HTTP_CATCH_STATUS} // '';
for my $n (1 .. $count) {
    my $c = $server->accept or last;
    if ($ENV{HTTP_CATCH_TIMES}) {
        open(my $t, '>>', $ENV{HTTP_CATCH_TIMES}) or die; printf $t "%d\n", time() * 1000; close $t;
    }
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
    my $code = $status[$n - 1] // 200;
    print $c "HTTP/1.1 $code ", ($code == 200 ? "OK" : "Not Now"), "\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: ",
        length($reply), "\r\nConnection: close\r\n\r\n", $reply;
    close $c;
}
