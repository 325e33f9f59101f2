// @fastify/rate-limit on fastify, for tests/real/fastify.rs: every request to / counts against
// one key (the clients share one API token, not one address); /ready opts out of the limit,
// so asking whether the server is up spends nothing.
//
//   node fastify_app.mjs --port 8080 --max 20 --time-window-ms 5000

import Fastify from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { announce, options, positive } from './common.mjs';

const args = options(['port', 'max', 'time-window-ms']);
const port = positive(args, 'port');

const app = Fastify({ keepAliveTimeout: 30_000 });
await app.register(rateLimit, {
  max: positive(args, 'max'),
  timeWindow: positive(args, 'time-window-ms'),
  keyGenerator: () => 'token',
});
app.get('/ready', { config: { rateLimit: false } }, (_req, reply) => reply.code(204).send());
app.get('/', async () => 'ok\n');

try {
  await app.listen({ port, host: '127.0.0.1' });
} catch (error) {
  console.error(`cannot listen on 127.0.0.1:${port}: ${error.message}`);
  process.exit(1);
}
announce(port, ['@fastify/rate-limit', 'fastify']);
