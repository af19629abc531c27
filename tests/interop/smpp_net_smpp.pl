#!/usr/bin/perl
# smpp_net_smpp.pl - cross-checks our SMPP codec against Net::SMPP (Debian
# libnet-smpp-perl), an independent implementation, in both directions:
#   1. the PDUs our encoder writes (emg_smpp_cli encode) are decoded by
#      Net::SMPP's read_pdu and their fields asserted;
#   2. PDUs built by Net::SMPP's own encoders are decoded by ours
#      (emg_smpp_cli decode) and their fields asserted.
# No network: Net::SMPP talks through one end of a socketpair and we read
# and write the other end.
#
# usage: perl smpp_net_smpp.pl path/to/emg_smpp_cli
# Prints "Net::SMPP cross-check: N passed, M failed"; exits 1 on any failure.
# SPDX-License-Identifier: Apache-2.0
use strict;
use warnings;
use File::Temp qw(tempfile);
use Socket;
use Symbol qw(gensym);
use Net::SMPP;

my $cli = shift or die "usage: $0 path/to/emg_smpp_cli\n";
-x $cli or die "$0: $cli is not executable\n";

my ($passed, $failed) = (0, 0);

sub check {
    my ($what, $got, $want) = @_;
    if (defined $got && $got eq $want) {
        $passed++;
    } else {
        $failed++;
        printf "FAIL %s: got '%s', want '%s'\n", $what, $got // '(none)', $want;
    }
}

# A Net::SMPP object on one end of a socketpair: what it writes is read at
# $peer, what is written at $peer it reads. It needs only its settings.
my ($smpp, $peer) = (gensym, gensym);
socketpair($smpp, $peer, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die "socketpair: $!";
bless $smpp, 'Net::SMPP';
my $defaults = Net::SMPP::Default;
${*$smpp}{$_} = $defaults->{$_} for keys %$defaults;
$smpp->set_version(0x34);
$smpp->autoflush(1);

sub read_exactly {
    my ($n) = @_;
    my $buf = '';
    while (length $buf < $n) {
        my $got = sysread($peer, $buf, $n - length $buf, length $buf);
        die "$0: short read from Net::SMPP\n" unless $got;
    }
    return $buf;
}

# The bytes of the PDU Net::SMPP just wrote.
sub take_pdu {
    my $head = read_exactly(4);
    return $head . read_exactly(unpack('N', $head) - 4);
}

# Net::SMPP's decoding of our bytes.
sub net_decode {
    my ($bytes) = @_;
    syswrite($peer, $bytes) == length $bytes or die "$0: write to Net::SMPP failed\n";
    return $smpp->read_pdu();
}

# ---- 1. we encode, Net::SMPP decodes ----

my $receipt_text = 'id:5f3a9c01 sub:001 dlvrd:001 submit date:2408061430 done date:2408061431 '
                 . 'stat:DELIVRD err:000 text:Hello from emg';

# name => [command_id, command_status, sequence_number, { field => value }]
# (TLV values as Net::SMPP gives them: the raw octets)
my %expect_ours = (
    bind_transceiver => [0x00000009, 0, 1, { system_id => 'emg', password => 'secret',
        system_type => 'EMG', interface_version => 0x34, addr_ton => 1, addr_npi => 1,
        address_range => '^47' }],
    bind_transceiver_resp => [0x80000009, 0, 1, { system_id => 'EMGSMSC',
        sc_interface_version => "\x34" }],
    bind_receiver_resp_error => [0x80000001, 0x0E, 1, { data => '' }],
    submit_sm => [0x00000004, 0, 2, { service_type => 'CMT', source_addr_ton => 5,
        source_addr_npi => 0, source_addr => 'Gateway', dest_addr_ton => 1, dest_addr_npi => 1,
        destination_addr => '4790000001', esm_class => 0x40, protocol_id => 0x41,
        priority_flag => 1, schedule_delivery_time => '', validity_period => '000001000000000R',
        registered_delivery => 1, replace_if_present_flag => 0, data_coding => 8,
        sm_default_msg_id => 0, short_message => "\x05\x00\x03\x2a\x02\x01\x00H\x00i",
        user_message_reference => pack('n', 0x1234), sar_msg_ref_num => pack('n', 42),
        sar_total_segments => "\x02", sar_segment_seqnum => "\x01" }],
    submit_sm_resp => [0x80000004, 0, 2, { message_id => '5f3a9c01' }],
    submit_sm_resp_throttled => [0x80000004, 0x58, 3, { data => '' }],
    deliver_sm => [0x00000005, 0, 7, { source_addr_ton => 1, source_addr_npi => 1,
        source_addr => '4790000001', dest_addr_ton => 5, destination_addr => 'Gateway',
        esm_class => 4, short_message => $receipt_text, receipted_message_id => "5f3a9c01\0",
        message_state => "\x02", network_error_code => "\x03\x00\x00" }],
    deliver_sm_resp => [0x80000005, 0, 7, { message_id => '' }],
    data_sm => [0x00000103, 0, 8, { source_addr => '12345', dest_addr_ton => 1,
        destination_addr => '4790000002', data_coding => 4, message_payload => 'payload',
        destination_port => pack('n', 2948) }],
    data_sm_resp => [0x80000103, 0, 8, { message_id => 'd1' }],
    query_sm => [0x00000003, 0, 9, { message_id => '5f3a9c01', source_addr_ton => 5,
        source_addr => 'Gateway' }],
    query_sm_resp => [0x80000003, 0, 9, { message_id => '5f3a9c01',
        final_date => '240806143100004+', message_state => 2, error_code => 0 }],
    cancel_sm => [0x00000008, 0, 15, { message_id => '5f3a9c02', source_addr_ton => 5,
        source_addr => 'Gateway', dest_addr_ton => 1, dest_addr_npi => 1,
        destination_addr => '4790000001', service_type => '' }],
    cancel_sm_resp => [0x80000008, 0x11, 15, { data => '' }],
    replace_sm => [0x00000007, 0, 16, { message_id => '5f3a9c03', source_addr => 'Gateway',
        schedule_delivery_time => '', validity_period => '000002000000000R',
        registered_delivery => 1, sm_default_msg_id => 0, short_message => 'New text' }],
    replace_sm_resp => [0x80000007, 0, 16, { data => '' }],
    outbind => [0x0000000B, 0, 10, { system_id => 'EMGSMSC', password => 'pw' }],
    alert_notification => [0x00000102, 0, 11, { source_addr_ton => 1,
        source_addr => '4790000003', esme_addr => 'emg' }],
    enquire_link => [0x00000015, 0, 12, { data => '' }],
    enquire_link_resp => [0x80000015, 0, 12, { data => '' }],
    unbind => [0x00000006, 0, 13, { data => '' }],
    unbind_resp => [0x80000006, 0, 13, { data => '' }],
    generic_nack => [0x80000000, 3, 14, { data => '' }],
);

my @ours = `"$cli" encode`;
$? == 0 or die "$0: $cli encode failed\n";
my %seen;
for my $line (@ours) {
    chomp $line;
    my ($name, $hex) = split /\t/, $line;
    my $want = $expect_ours{$name};
    if (!$want) {
        check("encode: known PDU name", $name, '(one of the expected)');
        next;
    }
    $seen{$name} = 1;
    my $pdu = net_decode(pack('H*', $hex));
    if (!$pdu) {
        check("$name: Net::SMPP decodes it", 'no', 'yes');
        next;
    }
    my ($id, $status, $seq, $fields) = @$want;
    check("$name: command_id", $pdu->{cmd}, $id);
    check("$name: command_status", $pdu->{status}, $status);
    check("$name: sequence_number", $pdu->{seq}, $seq);
    check("$name: Net::SMPP knows it", $pdu->{known_pdu} // 0, 1);
    for my $field (sort keys %$fields) {
        check("$name: $field", $pdu->{$field}, $fields->{$field});
    }
}
for my $name (sort keys %expect_ours) {
    check("encode: $name written", $seen{$name} ? 'yes' : 'no', 'yes');
}

# ---- 2. Net::SMPP encodes, we decode ----

# label => [Net::SMPP method, its arguments, { our key => value }]
# (our output: C-Octet strings as they are, octets and generic TLVs in hex)
my $net_receipt = 'id:abc sub:001 dlvrd:000 submit date:2408061430 done date:2408061431 '
                . 'stat:UNDELIV err:034 text:Hi';
my @theirs = (
    [bind_transceiver => [system_id => 'perl', password => 'pw', system_type => 'X',
        addr_ton => 2, addr_npi => 1, address_range => '^1', seq => 1],
        { command => 'bind_transceiver', sequence_number => 1, system_id => 'perl',
          password => 'pw', system_type => 'X', interface_version => 52, addr_ton => 2,
          addr_npi => 1, address_range => '^1' }],
    [bind_transceiver_resp => [system_id => 'SMSC', sc_interface_version => "\x34", seq => 1],
        { command => 'bind_transceiver_resp', system_id => 'SMSC',
          'tlv.sc_interface_version' => 52 }],
    [bind_transmitter => [system_id => 'tx', password => 'p', seq => 2],
        { command => 'bind_transmitter', sequence_number => 2, system_id => 'tx' }],
    [bind_receiver => [system_id => 'rx', password => 'p', seq => 3],
        { command => 'bind_receiver', sequence_number => 3, system_id => 'rx' }],
    [submit_sm => [source_addr_ton => 5, source_addr => 'Perl', dest_addr_ton => 1,
        dest_addr_npi => 1, destination_addr => '4790000001', esm_class => 0x40,
        protocol_id => 0x41, priority_flag => 2, registered_delivery => 1, data_coding => 8,
        validity_period => '000001000000000R', short_message => "\x05\x00\x03\x01\x02\x01\x00A",
        user_message_reference => pack('n', 77), 0x1400 => 5, seq => 5],
        { command => 'submit_sm', sequence_number => 5, source_addr_ton => 5,
          source_addr => 'Perl', dest_addr_ton => 1, dest_addr_npi => 1,
          destination_addr => '4790000001', esm_class => 64, protocol_id => 65,
          priority_flag => 2, registered_delivery => 1, data_coding => 8,
          validity_period => '000001000000000R', schedule_delivery_time => '', sm_length => 8,
          short_message => '05000301020100'.'41', 'tlv.user_message_reference' => 77,
          'tlv.0x1400' => '05' }],
    [submit_sm_resp => [message_id => 'abc', seq => 5],
        { command => 'submit_sm_resp', command_status => '0x00000000', message_id => 'abc' }],
    [submit_sm_resp => [message_id => '', status => 0x58, seq => 6],
        { command => 'submit_sm_resp', command_status => '0x00000058', message_id => '' }],
    [deliver_sm => [source_addr_ton => 1, source_addr => '4790000001', destination_addr => 'Perl',
        esm_class => 4, short_message => $net_receipt, receipted_message_id => "abc\0",
        message_state => "\x05", network_error_code => "\x03\x00\x22", seq => 7],
        { command => 'deliver_sm', sequence_number => 7, esm_class => 4,
          source_addr => '4790000001', destination_addr => 'Perl',
          short_message => unpack('H*', $net_receipt), 'tlv.receipted_message_id' => 'abc',
          'tlv.message_state' => 5, 'tlv.network_error_code' => 0x030022 }],
    [deliver_sm_resp => [message_id => '', seq => 7],
        { command => 'deliver_sm_resp', sequence_number => 7, message_id => '' }],
    [data_sm => [destination_addr => '4711', message_payload => 'hello',
        source_port => pack('n', 1), seq => 8],
        { command => 'data_sm', destination_addr => '4711',
          'tlv.message_payload' => unpack('H*', 'hello'), 'tlv.source_port' => 1 }],
    [data_sm_resp => [message_id => 'd', seq => 8],
        { command => 'data_sm_resp', message_id => 'd' }],
    [query_sm => [message_id => 'q1', source_addr_ton => 1, source_addr => 'x', seq => 9],
        { command => 'query_sm', message_id => 'q1', source_addr_ton => 1, source_addr => 'x' }],
    [query_sm_resp => [message_id => 'q1', final_date => '', message_state => 5,
        error_code => 9, seq => 9],
        { command => 'query_sm_resp', message_id => 'q1', final_date => '',
          message_state => 5, error_code => 9 }],
    [cancel_sm => [message_id => 'c1', source_addr => 'x', dest_addr_ton => 1,
        destination_addr => '4711', seq => 15],
        { command => 'cancel_sm', message_id => 'c1', source_addr => 'x', dest_addr_ton => 1,
          destination_addr => '4711' }],
    [cancel_sm_resp => [status => 0x11, seq => 15],
        { command => 'cancel_sm_resp', command_status => '0x00000011', sequence_number => 15 }],
    [replace_sm => [message_id => 'r1', source_addr => 'x', registered_delivery => 1,
        schedule_delivery_time => '000000000100000R', short_message => 'Hi again', seq => 16],
        { command => 'replace_sm', message_id => 'r1', source_addr => 'x', registered_delivery => 1,
          schedule_delivery_time => '000000000100000R', sm_length => 8,
          short_message => unpack('H*', 'Hi again') }],
    [replace_sm_resp => [seq => 16], { command => 'replace_sm_resp', sequence_number => 16 }],
    [outbind => [system_id => 'SMSC', password => 'pw', seq => 10],
        { command => 'outbind', system_id => 'SMSC', password => 'pw' }],
    [alert_notification => [source_addr => '4711', esme_addr => 'esme',
        ms_availability_status => "\x01", seq => 11],
        { command => 'alert_notification', source_addr => '4711', esme_addr => 'esme',
          'tlv.ms_availability_status' => 1 }],
    [enquire_link => [seq => 12], { command => 'enquire_link', sequence_number => 12 }],
    [enquire_link_resp => [seq => 12], { command => 'enquire_link_resp', sequence_number => 12 }],
    [unbind => [seq => 13], { command => 'unbind', sequence_number => 13 }],
    [unbind_resp => [seq => 13], { command => 'unbind_resp', sequence_number => 13 }],
    [generic_nack => [status => 3, seq => 14],
        { command => 'generic_nack', command_status => '0x00000003', sequence_number => 14 }],
);

my ($fh, $file) = tempfile(UNLINK => 1);
for my $i (0 .. $#theirs) {
    my ($method, $args) = @{$theirs[$i]};
    $smpp->$method(@$args, async => 1);
    print $fh "$i\t", unpack('H*', take_pdu()), "\n";
}
close $fh;

my %decoded;
{
    local $/ = '';  # one PDU per paragraph
    open(my $out, '-|', "\"$cli\" decode < \"$file\"") or die "$0: $cli decode: $!\n";
    while (my $block = <$out>) {
        my %kv = map { /^([^=]*)=(.*)$/ ? ($1, $2) : () } split /\n/, $block;
        $decoded{$kv{pdu}} = \%kv if defined $kv{pdu};
    }
    close $out or die "$0: $cli decode failed\n";
}
for my $i (0 .. $#theirs) {
    my ($method, undef, $want) = @{$theirs[$i]};
    my $got = $decoded{$i} // {};
    check("$method #$i: decodes", $got->{error} // 'ok', 'ok');
    for my $key (sort keys %$want) {
        my $value = $got->{$key};
        $value = lc $value if defined $value && $key =~ /^(short_message|tlv\.message_payload|tlv\.0x)/;
        check("$method #$i: $key", $value, $want->{$key});
    }
}

print "Net::SMPP cross-check: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
