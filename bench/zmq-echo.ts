/**
 * A ZeroMQ ROUTER echo in Node (zeromq.js, the server's transport): every message is sent back as it came, until one
 * whose last frame is `STOP` (echoed too). Prints the port it bound on loopback, then serves. The transport floor of
 * the ycgym server: `bindings/python/bench/bench_step.py` times it beside a Python echo (`node_echo_rtt_per_s`).
 *
 * Usage: `node dist/bench/zmq-echo.js`
 */
import { Router } from 'zeromq';

const sock = new Router({ linger: 0 });
await sock.bind('tcp://127.0.0.1:0');
const endpoint = sock.lastEndpoint ?? '';
process.stdout.write(`${endpoint.slice(endpoint.lastIndexOf(':') + 1)}\n`);
for await (const frames of sock) {
  await sock.send(frames);
  if ((frames[frames.length - 1] as Buffer).toString() === 'STOP') break;
}
sock.close();
