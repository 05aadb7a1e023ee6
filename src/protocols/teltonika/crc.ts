// CRC-16/IBM (also called CRC-16/ARC): polynomial 0x8005 reflected (0xA001), initial value 0, as
// Teltonika computes it over an AVL packet from the codec id to the second record count.
const TABLE = new Uint16Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
  TABLE[n] = c;
}

export function crc16Ibm(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let crc = 0;
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ TABLE[(crc ^ bytes[i]!) & 0xff]!;
  return crc;
}
