#!/usr/bin/env bash
# bash scripts/demo-proxy-init.sh — proxy-init alone (this was `npm run demo` until the whole mesh
# worked; `npm run demo` now shows the mesh on the local cluster):
#   a throwaway network namespace (a "pod"), proxy-init run in it with Linkerd's proxy-init arguments, the nat
#   chains listed the way the Linkerd tutorial lists them, one connection that iptables redirects to the proxy's
#   outbound port 4140 and whose original destination our SO_ORIGINAL_DST addon reads back, then
#   cleanup (proxy-init --cleanup, namespace deleted). Needs root (it makes a network namespace).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "demo: makes a network namespace, so it needs root: sudo npm run demo" >&2
  exit 1
fi

bash scripts/setup.sh
echo "[demo] building proxy-init"
npx turbo run build --filter=@minimesh/proxy-init --output-logs=errors-only >/dev/null

ns="mm-pi-demo-$$"
linkerd_args=(--ipv6=false --incoming-proxy-port 4143 --outgoing-proxy-port 4140 --proxy-uid 2102
  --inbound-ports-to-ignore 4190,4191,4567,4568 --outbound-ports-to-ignore 443,6443)
cleanup() {
  ip netns exec "$ns" node packages/proxy-init/dist/main.js --ipv6=false --cleanup --log-level warn >/dev/null 2>&1 || true
  ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

# The pod: loopback, and one interface with a private address whose subnet leads "out" of the pod.
ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add mm-pi-demo0 type veth peer name mm-pi-demo1
ip -n "$ns" addr add 10.231.0.1/24 dev mm-pi-demo0
ip -n "$ns" link set mm-pi-demo0 up
ip -n "$ns" link set mm-pi-demo1 up

echo
echo "\$ minimesh-proxy-init ${linkerd_args[*]}        (in network namespace $ns)"
ip netns exec "$ns" node packages/proxy-init/dist/main.js "${linkerd_args[@]}"

echo
echo "The nat chains, as the Linkerd tutorial lists them (iptables-legacy -t nat -L <chain> -n -v):"
for chain in PREROUTING PROXY_INIT_REDIRECT OUTPUT PROXY_INIT_OUTPUT; do
  echo
  ip netns exec "$ns" iptables-legacy -t nat -L "$chain" -n -v
done

echo
echo "One outbound connection from the pod to 10.231.0.2:80 (an app's upstream), with a listener on :4140 where the proxy will be:"
ip netns exec "$ns" node --import tsx --input-type=module -e "
import { createServer, connect } from 'node:net';
const { getOriginalDst } = await import(new URL('packages/proxy/src/native/index.ts', 'file://' + process.cwd() + '/').href);
const server = createServer((socket) => {
  const dst = getOriginalDst(socket);
  console.log('  arrived at ' + socket.localAddress + ':' + socket.localPort + ' (the proxy outbound port), from ' + socket.remoteAddress + ':' + socket.remotePort);
  console.log('  SO_ORIGINAL_DST says it was sent to ' + dst.address + ':' + dst.port + ' (IPv' + dst.family + ')');
  socket.end();
  server.close();
});
server.listen(4140, '0.0.0.0', () => {
  const client = connect({ host: '10.231.0.2', port: 80 });
  const timer = setTimeout(() => { console.error('  no connection arrived within 5s'); process.exit(1); }, 5000);
  client.on('close', () => clearTimeout(timer));
  client.on('error', (err) => { console.error('  connect failed: ' + err.message); process.exit(1); });
});
"

echo
echo "[demo] cleaning up: minimesh-proxy-init --cleanup, then deleting the namespace"
ip netns exec "$ns" node packages/proxy-init/dist/main.js --ipv6=false --cleanup --log-level warn
echo "nat table after --cleanup:"
ip netns exec "$ns" iptables-legacy-save -t nat | grep -v '^#'
