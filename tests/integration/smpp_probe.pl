#!/usr/bin/perl
# smpp_probe.pl - an ESME on Perl's Net::SMPP (independent of our codec)
# that probes an SMPP server's error paths and prints what it answered,
# one "name=value" line per result (statuses in hex).
#
# usage: smpp_probe.pl PORT before-bind
#        smpp_probe.pl PORT bad-password USER
#        smpp_probe.pl PORT unknown-command USER PASSWORD
#        smpp_probe.pl PORT binds N USER PASSWORD   (N binds held open together)
#        smpp_probe.pl PORT submit USER PASSWORD SRC DST TEXT   (one submit, its status and id)
#        smpp_probe.pl PORT send USER PASSWORD SRC DST TEXT [SCHEDULE]   (the same as a transmitter,
#                                                 asking for a receipt, maybe scheduled)
#        smpp_probe.pl PORT query USER PASSWORD ID SRC   (status, message_state, final_date, error_code)
#        smpp_probe.pl PORT cancel USER PASSWORD ID SRC DST
#        smpp_probe.pl PORT replace USER PASSWORD ID SRC TEXT
# SPDX-License-Identifier: Apache-2.0
use strict;
use warnings;
use Net::SMPP;

my ($port, $mode, @args) = @ARGV;
die "usage: $0 PORT MODE ...\n" unless $port && $mode;
$SIG{ALRM} = sub { print "timeout=1\n"; exit 1 };
alarm 20;

sub connect_only {
    my $smpp = Net::SMPP->new_connect('127.0.0.1', port => $port, timeout => 5);
    die "connect: $!\n" unless $smpp;
    return $smpp;
}

sub bind_as {
    my ($user, $password) = @_;
    my $smpp = connect_only();
    my $resp = $smpp->bind_transceiver(system_id => $user, password => $password);
    return ($smpp, $resp);
}

if ($mode eq 'before-bind') {
    my $smpp = connect_only();
    my $resp = $smpp->submit_sm(destination_addr => '4912345', short_message => 'too early');
    printf "submit_status=0x%02x\n", $resp->{status};
} elsif ($mode eq 'bad-password') {
    my ($smpp, $resp) = bind_as($args[0], 'wrong');
    printf "bind_status=0x%02x\n", $resp->{status};
    # The server closes after refusing: a read ends with nothing.
    my $next = $smpp->read_pdu();
    printf "closed=%d\n", defined $next ? 0 : 1;
} elsif ($mode eq 'unknown-command') {
    my ($smpp, $resp) = bind_as(@args);
    printf "bind_status=0x%02x\n", $resp->{status};
    my $seq = $smpp->req_backend(0x00000099, '', $smpp, async => 1);
    my $pdu = $smpp->read_pdu();
    printf "response_cmd=0x%08x\nresponse_status=0x%02x\nresponse_seq_matches=%d\n",
        $pdu->{cmd}, $pdu->{status}, $pdu->{seq} == $seq ? 1 : 0;
} elsif ($mode eq 'binds') {
    my ($n, $user, $password) = @args;
    my @held;
    for my $i (1 .. $n) {
        my ($smpp, $resp) = bind_as($user, $password);
        printf "bind_%d=0x%02x\n", $i, $resp->{status};
        push @held, $smpp;
    }
} elsif ($mode eq 'submit') {
    my ($user, $password, $src, $dst, $text) = @args;
    my ($smpp, $resp) = bind_as($user, $password);
    printf "bind_status=0x%02x\n", $resp->{status};
    my $sub = $smpp->submit_sm(source_addr => $src, source_addr_ton => 1, source_addr_npi => 1,
                               destination_addr => $dst, dest_addr_ton => 0, dest_addr_npi => 1,
                               short_message => $text);
    printf "submit_status=0x%02x\nmessage_id=%s\n", $sub->{status}, $sub->{message_id} // '';
    $smpp->unbind();
} elsif ($mode eq 'send') {
    my ($user, $password, $src, $dst, $text, $schedule) = @args;
    my $smpp = connect_only();
    my $resp = $smpp->bind_transmitter(system_id => $user, password => $password);
    my $sub = $smpp->submit_sm(source_addr => $src, source_addr_ton => 1, source_addr_npi => 1,
                               destination_addr => $dst, dest_addr_ton => 1, dest_addr_npi => 1,
                               registered_delivery => 1, schedule_delivery_time => $schedule // '',
                               short_message => $text);
    printf "bind_status=0x%02x\nsubmit_status=0x%02x\nmessage_id=%s\n", $resp->{status},
        $sub->{status}, $sub->{message_id} // '';
    $smpp->unbind();
} elsif ($mode eq 'query' || $mode eq 'cancel' || $mode eq 'replace') {
    my ($user, $password, $id, $src, $extra) = @args;
    my $smpp = connect_only();
    my $resp = $smpp->bind_transmitter(system_id => $user, password => $password);
    my $answer;
    if ($mode eq 'query') {
        $answer = $smpp->query_sm(message_id => $id, source_addr => $src, source_addr_ton => 1,
                                  source_addr_npi => 1);
    } elsif ($mode eq 'cancel') {
        $answer = $smpp->cancel_sm(message_id => $id, source_addr => $src, source_addr_ton => 1,
                                   source_addr_npi => 1, destination_addr => $extra,
                                   dest_addr_ton => 1, dest_addr_npi => 1);
    } else {
        $answer = $smpp->replace_sm(message_id => $id, source_addr => $src, source_addr_ton => 1,
                                    source_addr_npi => 1, registered_delivery => 1,
                                    short_message => $extra);
    }
    printf "bind_status=0x%02x\nstatus=0x%02x\n", $resp->{status}, $answer->{status};
    printf "message_id=%s\nmessage_state=%d\nfinal_date=%s\nerror_code=%d\n",
        $answer->{message_id} // '', $answer->{message_state} // -1, $answer->{final_date} // '',
        $answer->{error_code} // -1 if $mode eq 'query';
    $smpp->unbind();
} else {
    die "unknown mode $mode\n";
}
