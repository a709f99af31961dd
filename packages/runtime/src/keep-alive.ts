// The keep-alive race, the one rule the HTTP/1.1 clients share (the proxy's pool to the app,
// @minimesh/kube's pool to the API server): a peer that closes an idle kept-alive connection just as
// the client reuses it fails the request with ECONNRESET ("socket hang up") or EPIPE before any
// response byte. Such a request reached nobody, so a client may send it again on another connection
// when it still has the body (Go's net/http and hyper do the same); a fresh connection that fails is
// a real failure.

/**
 * True when `err` is the keep-alive race on `req` (a ClientRequest, or the proxy's own HTTP/1 connection):
 * a reused connection closed under it.
 */
export function isStaleKeepAlive(req: { readonly reusedSocket: boolean }, err: NodeJS.ErrnoException): boolean {
  return req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
}
