// Which addresses a webhook may reach. Refused: loopback, private, carrier-grade NAT, link-local,
// unique-local, multicast, unspecified, reserved and documentation ranges, in IPv4 and IPv6, and
// IPv4 addresses written inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16).
import { BlockList, isIP } from 'node:net';

const v4 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) v4.addSubnet(network, prefix, 'ipv4');

const v6 = new BlockList();
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) v6.addSubnet(network, prefix, 'ipv6');

/** The 16 bytes of an IPv6 address. */
function bytesOf(address: string): number[] {
  let text = address.split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted !== null) {
    const parts = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, -dotted[1]!.length)}${((parts[0]! << 8) | parts[1]!).toString(16)}:${((parts[2]! << 8) | parts[3]!).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') as [string, string] : [text, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}

/** The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), if any. */
function embeddedV4(address: string): string | undefined {
  const b = bytesOf(address);
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12, 16).join('.');
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return b.slice(12, 16).join('.');
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6).join('.');
  // IPv4-compatible (deprecated ::a.b.c.d), other than :: and ::1.
  if (zero(0, 12) && !zero(12, 15)) return b.slice(12, 16).join('.');
  return undefined;
}

/** Why `address` (an IP literal) may not be reached, or undefined when it may. */
export function forbiddenAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return v4.check(address, 'ipv4') ? `${address} is a loopback, private or reserved address` : undefined;
  if (family === 6) {
    const inner = embeddedV4(address);
    if (inner !== undefined) return forbiddenAddress(inner) === undefined ? undefined : `${address} carries ${inner}, a loopback, private or reserved address`;
    return v6.check(address, 'ipv6') ? `${address} is a loopback, private or reserved address` : undefined;
  }
  return `${address} is not an IP address`;
}
