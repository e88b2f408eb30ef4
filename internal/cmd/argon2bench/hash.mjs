// Raw argon2id hashing with @node-rs/argon2 for argon2bench: argon2id at
// m=19456 KiB, t=2, p=1, 32-byte keys, CONCURRENCY hashes at a time for
// SECONDS seconds after one warm-up hash. Prints one JSON line: the hashes
// done, the seconds taken, the process's CPU seconds in that time, and the
// key of the fixed check input in hex.
import { hashRaw } from '@node-rs/argon2';

const [seconds, concurrency] = process.argv.slice(2).map(Number);
const opts = {
  algorithm: 2, // Argon2id
  version: 1, // 0x13
  memoryCost: 19456,
  timeCost: 2,
  parallelism: 1,
  outputLen: 32,
  salt: new TextEncoder().encode('0123456789abcdef'),
};
const password = 'correct horse battery staple';

const check = (await hashRaw(password, opts)).toString('hex');
let hashes = 0;
const cpu0 = process.cpuUsage();
const start = performance.now();
const end = start + seconds * 1000;
async function worker() {
  while (performance.now() < end) {
    await hashRaw(password, opts);
    hashes++;
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const elapsed = (performance.now() - start) / 1000;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ hashes, seconds: elapsed, cpuSeconds: (cpu.user + cpu.system) / 1e6, check }));
