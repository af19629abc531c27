// SPDX-License-Identifier: Apache-2.0
// node_smpp_smsc.js - an SMSC written on node-smpp (npm "smpp"), an SMPP
// implementation independent of ours, for interoperability tests.
// Accepts any bind, answers submit_sm with a message id, and when a receipt
// is asked for sends a deliver_sm receipt (esm_class 0x04, receipted_message_id
// and message_state TLVs) after delayMs. Writes its port to portFile and, on
// SIGTERM, a JSON summary to summaryFile.
//
// With MO_COUNT > 0 it also sends that many MO messages (deliver_sm,
// esm_class 0) on the first bind, "MO 1" ... from 4917999000001 to 12345.
//
// usage: node node_smpp_smsc.js PORT_FILE SUMMARY_FILE [DELAY_MS] [MO_COUNT]
'use strict';
const fs = require('fs');
const smpp = require('smpp');

const [portFile, summaryFile, delayArg, moArg] = process.argv.slice(2);
const delayMs = Number(delayArg || 100);
let moLeft = Number(moArg || 0);
const counts = { binds: 0, submits: 0, receipts_sent: 0, receipts_acked: 0, unbinds: 0,
                 mo_sent: 0, mo_acked: 0, texts: [] };
let nextId = 5000000;

function stamp(d) {
  const p = (n) => String(n).padStart(2, '0');
  return p(d.getUTCFullYear() % 100) + p(d.getUTCMonth() + 1) + p(d.getUTCDate()) +
         p(d.getUTCHours()) + p(d.getUTCMinutes());
}

const server = smpp.createServer(function (session) {
  const bind = (pdu) => {
    counts.binds++;
    session.send(pdu.response({ system_id: 'NODESMSC' }));
    for (; moLeft > 0; moLeft--) {
      counts.mo_sent++;
      session.deliver_sm({
        source_addr: '4917999000001', source_addr_ton: 1, source_addr_npi: 1,
        destination_addr: '12345', esm_class: 0, short_message: 'MO ' + counts.mo_sent,
      }, function (resp) {
        if (resp.command_status === 0) counts.mo_acked++;
      });
    }
  };
  session.on('bind_transceiver', bind);
  session.on('bind_transmitter', bind);
  session.on('bind_receiver', bind);
  session.on('enquire_link', (pdu) => session.send(pdu.response()));
  session.on('unbind', (pdu) => { counts.unbinds++; session.send(pdu.response()); session.close(); });
  session.on('error', () => {});
  session.on('submit_sm', function (pdu) {
    counts.submits++;
    const id = String(nextId++);
    const text = Buffer.isBuffer(pdu.short_message) ? pdu.short_message.toString('latin1')
                                                     : String(pdu.short_message.message || '');
    if (counts.texts.length < 100000) counts.texts.push(text);
    session.send(pdu.response({ message_id: id }));
    if (!(pdu.registered_delivery & 1)) return;
    setTimeout(function () {
      const now = stamp(new Date());
      session.deliver_sm({
        source_addr: pdu.destination_addr, source_addr_ton: 1, source_addr_npi: 1,
        destination_addr: pdu.source_addr, dest_addr_ton: 1, dest_addr_npi: 1,
        esm_class: 4,
        short_message: 'id:' + id + ' sub:001 dlvrd:001 submit date:' + now + ' done date:' + now +
                       ' stat:DELIVRD err:000 text:',
        receipted_message_id: id,
        message_state: 2,
      }, function (resp) {
        if (resp.command_status === 0) counts.receipts_acked++;
      });
      counts.receipts_sent++;
    }, delayMs);
  });
});

server.listen(0, '127.0.0.1', function () {
  fs.writeFileSync(portFile, String(server.address().port) + '\n');
});

process.on('SIGTERM', function () {
  fs.writeFileSync(summaryFile, JSON.stringify(counts));
  process.exit(0);
});
