// Which addresses a webhook may reach: none of the ranges the IANA IPv4 and IPv6 special-purpose
// address registries mark as not globally reachable (loopback, private, carrier-grade NAT,
// link-local, unique-local, benchmarking, documentation, protocol assignments, translation
// prefixes for local use, discard and reserved), nor multicast or deprecated site-local. An IPv6
// address that carries an IPv4 address a public IPv6 route leads to (NAT64 64:ff9b::/96, 6to4
// 2002::/16, the deprecated ::a.b.c.d) is judged by that IPv4 address. Whole ranges are refused
// even where the registry makes a single anycast address inside them reachable: no receiver lives
// there.
import { BlockList, isIP } from 'node:net';

type Range = readonly [network: string, prefix: number, name: string];

const V4_RANGES: readonly Range[] = [
  ['0.0.0.0', 8, '"this network"'], ['10.0.0.0', 8, 'private'], ['100.64.0.0', 10, 'carrier-grade NAT'], ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'], ['172.16.0.0', 12, 'private'], ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'], ['192.88.99.0', 24, 'deprecated 6to4 relay anycast'], ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'], ['198.51.100.0', 24, 'documentation'], ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'], ['240.0.0.0', 4, 'reserved'],
];

const V6_RANGES: readonly Range[] = [
  ['::', 128, 'unspecified'], ['::1', 128, 'loopback'],
  // Mapped addresses name an IPv4 host through the local stack only; translated ones (SIIT) are
  // never routed: the IPv4 address itself is what a receiver is reached at.
  ['::ffff:0:0', 96, 'IPv4-mapped'], ['::ffff:0:0:0', 96, 'IPv4-translated'],
  ['64:ff9b:1::', 48, 'local-use IPv4/IPv6 translation'], ['100::', 64, 'discard-only'], ['100:0:0:1::', 64, 'dummy'],
  // Teredo (2001::/32), benchmarking, ORCHID and the other IETF protocol assignments.
  ['2001::', 23, 'IETF protocol assignments'], ['2001:db8::', 32, 'documentation'], ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'segment routing (SRv6) SIDs'], ['fc00::', 7, 'unique-local'], ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'deprecated site-local'], ['ff00::', 8, 'multicast'],
];

function listOf(ranges: readonly Range[], family: 'ipv4' | 'ipv6') {
  return ranges.map(([network, prefix, name]) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, family);
    return { list, family, text: `${network}/${prefix}`, name };
  });
}

const v4 = listOf(V4_RANGES, 'ipv4');
const v6 = listOf(V6_RANGES, 'ipv6');

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

/** The IPv4 address a routable IPv6 address carries (NAT64, 6to4, IPv4-compatible), if any. */
function embeddedV4(b: number[]): string | undefined {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return b.slice(12, 16).join('.');
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6).join('.');
  // IPv4-compatible (deprecated ::a.b.c.d), other than :: and ::1.
  if (zero(0, 12) && !zero(12, 15)) return b.slice(12, 16).join('.');
  return undefined;
}

/** The range of `ranges` that holds `address`, if any. */
function rangeOf(address: string, ranges: ReturnType<typeof listOf>) {
  return ranges.find((r) => r.list.check(address, r.family));
}

const unreachable = (range: { text: string; name: string }) => `in ${range.text} (${range.name}), not globally reachable`;

/** Why `address` (an IP literal) may not be reached, or undefined when it may. */
export function forbiddenAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) {
    const range = rangeOf(address, v4);
    return range === undefined ? undefined : `${address} is ${unreachable(range)}`;
  }
  if (family === 6) {
    const bytes = bytesOf(address);
    // Checked on its groups written out: BlockList would judge an IPv4-mapped text by IPv4 rules.
    const full = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(':');
    const range = rangeOf(full, v6);
    if (range !== undefined) return `${address} is ${unreachable(range)}`;
    const inner = embeddedV4(bytes);
    const innerRange = inner === undefined ? undefined : rangeOf(inner, v4);
    return innerRange === undefined ? undefined : `${address} carries ${inner}, ${unreachable(innerRange)}`;
  }
  return `${address} is not an IP address`;
}
