// Issue 17: the CSR parser reads bytes any pod that can reach identity's port sends. Properties
// (fast-check): arbitrary bytes, and valid CSRs with bytes flipped, cut, inserted or appended, either
// parse/validate or are refused with IdentityError MINIMESH_IDENTITY_CSR_INVALID; nothing else is
// thrown, and a mutated CSR that still validates asked for exactly what the original asked for.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCsr } from '../../test/helpers/pki.js';
import { IdentityError } from '../errors.js';
import { parseCsr, validateCsr } from './csr.js';

const ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';

function outcome(f: () => unknown): 'ok' | 'refused' {
  try {
    f();
    return 'ok';
  } catch (err) {
    expect(err).toBeInstanceOf(IdentityError);
    expect((err as IdentityError).code).toBe('MINIMESH_IDENTITY_CSR_INVALID');
    expect((err as Error).message).toMatch(/^CSR: /);
    return 'refused';
  }
}

type Mutation =
  | { op: 'flip'; at: number; xor: number }
  | { op: 'cut'; at: number }
  | { op: 'insert'; at: number; bytes: Uint8Array }
  | { op: 'append'; bytes: Uint8Array };

function mutate(der: Buffer, ms: Mutation[]): Buffer {
  let b = Buffer.from(der);
  for (const m of ms) {
    const at = 'at' in m ? m.at % Math.max(1, b.length) : 0;
    if (m.op === 'flip' && b.length > 0) b[at] = (b[at] as number) ^ m.xor;
    else if (m.op === 'cut') b = b.subarray(0, at);
    else if (m.op === 'insert') b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
    else if (m.op === 'append') b = Buffer.concat([b, m.bytes]);
  }
  return b;
}

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ op: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ op: fc.constant('append' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
);

describe('CSR parser (property)', () => {
  let valid: Buffer;
  let multiSan: Buffer;
  beforeAll(async () => {
    valid = (await createCsr({ cn: ID, dns: [ID] })).der;
    multiSan = (await createCsr({ dns: [ID, 'other.default.serviceaccount.identity.minimesh.cluster.local'] })).der;
  });

  it('refuses arbitrary bytes with IdentityError, never anything else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        outcome(() => parseCsr(Buffer.from(bytes)));
        expect(outcome(() => validateCsr(Buffer.from(bytes), ID))).toBe('refused');
      }),
      { numRuns: 3000 },
    );
  });

  it('refuses DER-shaped garbage (a SEQUENCE of random TLVs) the same way', () => {
    const tlv = fc
      .tuple(
        fc.constantFrom(0x30, 0x31, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0c, 0xa0, 0x82),
        fc.uint8Array({ maxLength: 40 }),
      )
      .map(([tag, body]) => Buffer.concat([Buffer.from([tag, body.length]), body]));
    fc.assert(
      fc.property(fc.array(tlv, { maxLength: 6 }), (parts) => {
        const body = Buffer.concat(parts);
        const der = Buffer.concat([Buffer.from([0x30, 0x81, body.length & 0xff]), body]);
        outcome(() => parseCsr(der));
        expect(outcome(() => validateCsr(der, ID))).toBe('refused');
      }),
      { numRuns: 2000 },
    );
  });

  it('a mutated valid CSR is refused, or still asks for exactly the same key and identity', () => {
    const original = parseCsr(valid);
    let ok = 0;
    let refused = 0;
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 3 }), (ms) => {
        const der = mutate(valid, ms);
        if (outcome(() => validateCsr(der, ID)) === 'refused') {
          refused += 1;
          return;
        }
        ok += 1;
        // Accepted: the signed part is the original's (the signature covers it), so the key and the
        // names are unchanged; only unsigned bytes (e.g. the signature's encoding) may differ.
        const p = parseCsr(der);
        expect(p.signedBytes.equals(original.signedBytes)).toBe(true);
        expect(p.publicKeyInfo.equals(original.publicKeyInfo)).toBe(true);
        expect(p.sans).toEqual([{ kind: 'dns', value: ID }]);
      }),
      { numRuns: 1500 },
    );
    expect(refused).toBeGreaterThan(1000);
    // The unmutated CSR is accepted (so "refused" above is the mutation's doing).
    expect(outcome(() => validateCsr(valid, ID))).toBe('ok');
    expect(ok + refused).toBe(1500);
  });

  it('a CSR with a second SAN stays refused under mutation (never turned into an accepted one)', () => {
    fc.assert(
      fc.property(fc.array(mutation, { maxLength: 3 }), (ms) => {
        expect(outcome(() => validateCsr(mutate(multiSan, ms), ID))).toBe('refused');
      }),
      { numRuns: 1000 },
    );
  });
});
