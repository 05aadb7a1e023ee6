// A pino logger whose JSON lines a test can read back.
import { Writable } from 'node:stream';
import pino, { type Level } from 'pino';

export function captureLogs(level: Level = 'debug') {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    logger: pino({ level }, sink),
    text: () => text,
    lines: () => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
