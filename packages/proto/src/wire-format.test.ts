// Pins the wire format with hand-assembled bytes, so a change to a field number or type cannot slip by.
import { describe, expect, it } from 'vitest';
import { destination, identity } from './index.js';
import { toTcpAddress, fromTcpAddress } from './net-address.js';

const hex = (b: Uint8Array) =>
  Buffer.from(b)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ');

describe('wire format', () => {
  it('CertifyRequest{identity:"a", token:0x01, csr:0x02}', () => {
    const bytes = identity.CertifyRequest.encode({
      identity: 'a',
      token: Buffer.from([1]),
      certificateSigningRequest: Buffer.from([2]),
    }).finish();
    expect(hex(bytes)).toBe('0a 01 61 12 01 01 1a 01 02');
    const back = identity.CertifyRequest.decode(Buffer.from('0a0161120101 1a0102'.replace(/ /g, ''), 'hex'));
    expect(back.identity).toBe('a');
    expect([...back.certificateSigningRequest]).toEqual([2]);
  });

  it('GetDestination{scheme:"k8s", path:"web:80", context_token:"x"}', () => {
    const bytes = destination.GetDestination.encode({ scheme: 'k8s', path: 'web:80', contextToken: 'x' }).finish();
    // 0a 03 "k8s" | 12 06 "web:80" | 1a 01 "x"
    expect(hex(bytes)).toBe('0a 03 6b 38 73 12 06 77 65 62 3a 38 30 1a 01 78');
  });

  it('Update{add:{addrs:[{addr:10.0.0.1:8080, weight:10000}]}}', () => {
    const bytes = destination.Update.encode({
      update: {
        $case: 'add',
        value: { addrs: [{ addr: toTcpAddress('10.0.0.1', 8080), weight: 10000, metricLabels: {} }], metricLabels: {} },
      },
    }).finish();
    // IPAddress{ipv4 (tag 0d, fixed32 LE) 0x0a000001}            = 0d 01 00 00 0a            (5 bytes)
    // TcpAddress{ip (0a 05 …), port (tag 10) 8080 = 90 3f}        = 0a 05 … 10 90 3f          (10 bytes)
    // WeightedAddr{addr (0a 0a …), weight (tag 18) 10000 = 90 4e} = 0a 0a … 18 90 4e          (15 bytes)
    // WeightedAddrSet{addrs (0a 0f …)} (17 bytes), Update{add (0a 11 …)}
    expect(hex(bytes)).toBe('0a 11 0a 0f 0a 0a 0a 05 0d 01 00 00 0a 10 90 3f 18 90 4e');
    const back = destination.Update.decode(bytes);
    expect(back.update?.$case).toBe('add');
    if (back.update?.$case === 'add')
      expect(fromTcpAddress(back.update.value.addrs[0]?.addr)).toEqual({ ip: '10.0.0.1', port: 8080 });
  });

  it('Update{no_endpoints:{exists:true}} and Update{remove}', () => {
    expect(hex(destination.Update.encode({ update: { $case: 'noEndpoints', value: { exists: true } } }).finish())).toBe(
      '1a 02 08 01',
    );
    const remove = destination.Update.encode({
      update: { $case: 'remove', value: { addrs: [toTcpAddress('192.168.1.2', 80)] } },
    }).finish();
    expect(hex(remove)).toBe('12 0b 0a 09 0a 05 0d 02 01 a8 c0 10 50');
  });

  it('WeightedAddr carries tls_identity as field 5 and protocol_hint h2 as field 6', () => {
    const bytes = destination.WeightedAddr.encode({
      weight: 0,
      metricLabels: {},
      tlsIdentity: { strategy: { $case: 'dnsLikeIdentity', value: { name: 'a' } } },
      protocolHint: { protocol: { $case: 'h2', value: {} } },
    }).finish();
    // TlsIdentity{dns_like_identity (0a 03) DnsLikeIdentity{name (0a 01) "a"}} under tag 2a (field 5, len 5);
    // ProtocolHint{h2 (0a 00)} under tag 32 (field 6, len 2).
    expect(hex(bytes)).toBe('2a 05 0a 03 0a 01 61 32 02 0a 00');
  });
});

describe('net addresses', () => {
  it.each([
    ['10.23.0.5', 443],
    ['fd00::1', 80],
    ['2001:db8:0:0:1:0:0:1', 8080],
    ['::', 1],
  ])('%s:%d round-trips', (ip, port) => {
    const back = fromTcpAddress(toTcpAddress(ip, port));
    expect(back?.port).toBe(port);
    expect(back?.ip).toBe(ip === '2001:db8:0:0:1:0:0:1' ? '2001:db8::1:0:0:1' : ip);
  });

  it('rejects a non-address with a message naming it', () => {
    expect(() => toTcpAddress('web.default', 80)).toThrow('"web.default" is not an IPv4 or IPv6 address');
  });
});
