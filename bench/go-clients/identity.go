// identity-certify: one gRPC connection per caller, each with its own identity, service-account token
// and P-256 CSR, calling Certify.
//
//	{"cmd":"first","port":P,"since":T,"callers":[...]} → {"ms":M} once one Certify succeeded, M ms after T
//	                                                     (ms since the epoch, the bench's clock)
//	{"cmd":"run","port":P,"callers":[...],"seconds":S}   → {"count":N,"errors":E,"latencies":[ms...]}
//	{"cmd":"storm","port":P,"callers":[...]}             → {"ms":M,"errors":E,"failed":F,"latencies":[ms...],
//	                                                        "reasons":{"<gRPC code>: <message>":count},
//	                                                        "attempts":A,"model":"linkerd2-proxy"}:
//	                                                       every caller (one per pod) certifies at once, as
//	                                                       proxies do when every pod restarts, each attempt
//	                                                       on its own new connection and retried as
//	                                                       linkerd2-proxy retries (stormAttempt), for as
//	                                                       long as 120 s; M: until the last succeeded
//	{"cmd":"exit"}
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkerd/linkerd2-proxy-api/go/identity"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

type caller struct {
	Identity string `json:"identity"`
	Token    string `json:"token"`
}

type certifyCommand struct {
	Cmd     string   `json:"cmd"`
	Port    int      `json:"port"`
	Since   float64  `json:"since"`
	Seconds float64  `json:"seconds"`
	Callers []caller `json:"callers"`
}

func (c certifyCommand) name() string { return c.Cmd }

type client struct {
	req  *identity.CertifyRequest
	conn *grpc.ClientConn
	api  identity.IdentityClient
}

// csr is a PKCS#10 request for one identity (CN and the one DNS SAN), ECDSA P-256, as a proxy makes it.
func csr(id string) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: id},
		DNSNames: []string{id},
	}, key)
}

func connect(port int, callers []caller) ([]*client, error) {
	clients := make([]*client, 0, len(callers))
	for _, c := range callers {
		der, err := csr(c.Identity)
		if err != nil {
			return nil, err
		}
		conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			// a server that is still starting: retry quickly, not after grpc-go's 1 s backoff
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.6, MaxDelay: 20 * time.Millisecond},
				MinConnectTimeout: time.Second,
			}))
		if err != nil {
			return nil, err
		}
		clients = append(clients, &client{
			req:  &identity.CertifyRequest{Identity: c.Identity, Token: []byte(c.Token), CertificateSigningRequest: der},
			conn: conn,
			api:  identity.NewIdentityClient(conn),
		})
	}
	return clients, nil
}

func (c *client) certify() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.api.Certify(ctx, c.req)
	if err == nil && len(res.GetLeafCertificate()) == 0 {
		err = fmt.Errorf("no leaf certificate in the answer")
	}
	return err
}

func closeAll(clients []*client) {
	for _, c := range clients {
		_ = c.conn.Close()
	}
}

func first(c certifyCommand) {
	clients, err := connect(c.Port, c.Callers[:1])
	if err != nil {
		send(map[string]any{"ms": math.NaN(), "error": err.Error()})
		return
	}
	defer closeAll(clients)
	for {
		if clients[0].certify() == nil {
			send(map[string]float64{"ms": nowMs() - c.Since})
			return
		}
		if nowMs()-c.Since > 60_000 {
			send(map[string]any{"ms": nil})
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func run(c certifyCommand) {
	clients, err := connect(c.Port, c.Callers)
	if err != nil {
		send(map[string]any{"count": 0, "errors": 1, "latencies": []float64{}, "error": err.Error()})
		return
	}
	defer closeAll(clients)
	var warm sync.WaitGroup
	for _, cl := range clients {
		warm.Add(1)
		go func(cl *client) { defer warm.Done(); _ = cl.certify() }(cl) // warm the channels
	}
	warm.Wait()
	var (
		mu        sync.Mutex
		latencies = []float64{}
		count     int
		errors    int
		wg        sync.WaitGroup
	)
	end := time.Now().Add(time.Duration(c.Seconds * float64(time.Second)))
	for _, cl := range clients {
		wg.Add(1)
		go func(cl *client) {
			defer wg.Done()
			for time.Now().Before(end) {
				t := time.Now()
				err := cl.certify()
				d := float64(time.Since(t).Nanoseconds()) / 1e6
				mu.Lock()
				if err != nil {
					errors++
				} else {
					latencies = append(latencies, d)
					count++
				}
				mu.Unlock()
			}
		}(cl)
	}
	wg.Wait()
	send(map[string]any{"count": count, "errors": errors, "latencies": latencies})
}

// How linkerd2-proxy (commit 29637b64f6ce, read 2026-11-29) gets its certificate, which the storm's
// callers copy: its identity client is a control-plane client with the outbound connect settings
// (linkerd/app/src/env/identity.rs): a connect timeout of 1 s around TCP and TLS
// (DEFAULT_OUTBOUND_CONNECT_TIMEOUT; the HTTP/2 handshake after it has none), reconnects backed off
// exponentially from 100 ms to 60 s with 10 % jitter (DEFAULT_OUTBOUND_CONNECT_BACKOFF), and a request
// waits at most 3 s in its queue for a connection (DEFAULT_OUTBOUND_HTTP_FAILFAST_TIMEOUT); the Certify
// itself has no deadline. Each attempt builds a new client ("clients are instantiated on-demand rather
// than held", linkerd/proxy/identity-client/src/certify.rs), and after a failed one the proxy sleeps
// LINKERD2_PROXY_IDENTITY_MIN_REFRESH (10 s by default) before the next.
const (
	stormConnectTimeout = time.Second
	stormFailfast       = 3 * time.Second
	stormRetryAfter     = 10 * time.Second
	stormDeadline       = 120 * time.Second
)

var errFailfast = fmt.Errorf("failfast: no connection within %v", stormFailfast)

// stormAttempt is one Certify as linkerd2-proxy makes it (above): a new connection, given up when no
// TCP connection was made within the failfast time, otherwise waited for until the storm's deadline.
func stormAttempt(port int, req *identity.CertifyRequest, deadline time.Time) error {
	var connected atomic.Bool
	dialer := &net.Dialer{Timeout: stormConnectTimeout}
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, "tcp", addr)
			if err == nil {
				connected.Store(true)
			}
			return c, err
		}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 2, Jitter: 0.1, MaxDelay: 60 * time.Second},
			// grpc-go counts the server's HTTP/2 preface in its connect deadline; linkerd2-proxy's 1 s is
			// the dialer's above, and its handshake has none: wait as long as the storm lasts.
			MinConnectTimeout: time.Until(deadline),
		}))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	failfast := time.AfterFunc(stormFailfast, func() {
		if !connected.Load() {
			cancel()
		}
	})
	defer failfast.Stop()
	res, err := identity.NewIdentityClient(conn).Certify(ctx, req, grpc.WaitForReady(true))
	if err != nil && !connected.Load() && ctx.Err() != nil && time.Now().Before(deadline) {
		return errFailfast
	}
	if err == nil && len(res.GetLeafCertificate()) == 0 {
		err = fmt.Errorf("no leaf certificate in the answer")
	}
	return err
}

// storm certifies every caller once, all at once, as linkerd2-proxy does it; see the command list above.
func storm(c certifyCommand) {
	reqs := make([]*identity.CertifyRequest, 0, len(c.Callers))
	for _, cl := range c.Callers {
		der, err := csr(cl.Identity)
		if err != nil {
			send(map[string]any{"ms": nil, "errors": 1, "failed": len(c.Callers), "latencies": []float64{}, "error": err.Error()})
			return
		}
		reqs = append(reqs, &identity.CertifyRequest{Identity: cl.Identity, Token: []byte(cl.Token), CertificateSigningRequest: der})
	}
	var (
		mu        sync.Mutex
		latencies = make([]float64, 0, len(reqs))
		errors    int
		attempts  int
		failed    int
		reasons   = map[string]int{}
		wg        sync.WaitGroup
		start     = make(chan struct{})
		// set just before the start, so the CSRs and goroutines above do not count
		t0       time.Time
		deadline time.Time
	)
	for _, req := range reqs {
		wg.Add(1)
		go func(req *identity.CertifyRequest) {
			defer wg.Done()
			<-start
			for {
				t := time.Now()
				err := stormAttempt(c.Port, req, deadline)
				mu.Lock()
				attempts++
				if err == nil {
					latencies = append(latencies, float64(time.Since(t).Nanoseconds())/1e6)
					mu.Unlock()
					return
				}
				errors++
				if len(reasons) < 20 || reasons[reason(err)] > 0 {
					reasons[reason(err)]++
				}
				if time.Now().Add(stormRetryAfter).After(deadline) {
					failed++
					mu.Unlock()
					return
				}
				mu.Unlock()
				time.Sleep(stormRetryAfter)
			}
		}(req)
	}
	t0 = time.Now()
	deadline = t0.Add(stormDeadline)
	close(start)
	wg.Wait()
	send(map[string]any{"ms": float64(time.Since(t0).Nanoseconds()) / 1e6, "errors": errors, "failed": failed, "attempts": attempts,
		"latencies": latencies, "reasons": reasons, "model": "linkerd2-proxy"})
}

// reason is an error's gRPC code and message, with what varies between calls (numbers) left out, so
// that errors of one kind count together.
func reason(err error) string {
	st, _ := status.FromError(err)
	msg := st.Message()
	if len(msg) > 160 {
		msg = msg[:160]
	}
	return st.Code().String() + ": " + strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, msg)
}

func identityCertify() {
	serve(map[string]bool{"ready": true}, func(c certifyCommand) {
		switch c.Cmd {
		case "first":
			first(c)
		case "run":
			run(c)
		case "storm":
			storm(c)
		}
	})
}
