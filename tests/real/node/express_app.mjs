// express-rate-limit on express, for tests/real/express.rs: every request to / counts against
// one key (the clients share one API token, not one address); /ready is routed before the
// limiter, so asking whether the server is up spends nothing.
//
//   node express_app.mjs --port 8080 --limit 20 --window-ms 5000 \
//       --standard-headers draft-8 --legacy-headers false
//
// --standard-headers false sends none of the draft's fields (then only the legacy ones).

import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { announce, options, positive } from './common.mjs';

const DRAFTS = ['draft-6', 'draft-7', 'draft-8', 'false'];

const args = options(['port', 'limit', 'window-ms', 'standard-headers', 'legacy-headers']);
const port = positive(args, 'port');
if (!DRAFTS.includes(args['standard-headers'])) {
  console.error(`--standard-headers must be one of ${DRAFTS.join(', ')}`);
  process.exit(2);
}
if (!['true', 'false'].includes(args['legacy-headers'])) {
  console.error('--legacy-headers must be true or false');
  process.exit(2);
}

const app = express();
app.get('/ready', (_req, res) => res.status(204).end());
app.use(
  rateLimit({
    windowMs: positive(args, 'window-ms'),
    limit: positive(args, 'limit'),
    standardHeaders: args['standard-headers'] === 'false' ? false : args['standard-headers'],
    legacyHeaders: args['legacy-headers'] === 'true',
    // Not the address: v8 would warn about IPv6 subnets for a key made from req.ip.
    keyGenerator: () => 'token',
  }),
);
app.get('/', (_req, res) => res.send('ok\n'));

const server = app.listen(port, '127.0.0.1', (error) => {
  if (error) {
    console.error(`cannot listen on 127.0.0.1:${port}: ${error.message}`);
    process.exit(1);
  }
  announce(port, ['express-rate-limit', 'express']);
});
// Twelve client threads keep their connections alive between requests.
server.keepAliveTimeout = 30_000;
