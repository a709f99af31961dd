// scale-streams: the discovery streams of a simulated mesh, held as proxies hold them, for bench/scale
// and the e2e scale spec:
//
//   - C client proxies, each with its own connection to destination and to the policy controller, open
//     one destination Get and one outbound policy Watch per Service (the Services they talk to);
//   - every pod's proxy opens one inbound policy WatchPort per pod port (pods share a connection per
//     podsPerConn pods: one connection per pod would be 10,000 connections from one process);
//   - with several addresses (replicas), client proxies start on different ones; a stream that fails is
//     opened again after a short backoff against the next address, from an empty view, as linkerd2-proxy
//     does (behind a Service, a new stream lands on a live replica).
//
// Commands (JSON lines; see main.go):
//
//	{"cmd":"open","destination":["127.0.0.1:P",...],"policy":["127.0.0.1:Q"],"clients":C,"podsPerConn":N,"node":"kwok-0",
//	 "services":[{"authority":"web-0.ns.svc.cluster.local:80","ip":"10.247.0.7","port":80}],
//	 "pods":[{"ns":"ns","name":"pod","port":8080}]}
//	                 → {"ready":{...counts},"ms":M,"msByKind":{"get":M,...}} once every stream has its first message,
//	                   or after "openTimeoutMs" (default 180000) with the counts so far and "incomplete":true
//	{"cmd":"record"} → {"recording":true}: from now on, remember when each Get stream first sees each address
//	{"cmd":"adds"}   → {"adds":[{"authority":A,"ip":"10.64.0.7","times":[ms...]}]} (ms since the epoch), and clears
//	{"cmd":"expectInbound","podKeys":["ns/pod",...],"protocol":"http2"}
//	                 → {"armed":true}, then {"inboundTimes":[ms...]} once every WatchPort of those pods has
//	                   received a Server whose protocol is that kind
//	{"cmd":"views"}  → {"views":{authority:[{"ips":["ip:port",...],"streams":K}]}}: the distinct views of
//	                   each Service's Get streams (one entry when every stream agrees)
//	{"cmd":"stats"}  → {"stats":{...}}: streams open, errors (by gRPC code, with the first message of each) and reopenings by kind
//	{"cmd":"close"}  → {"closed":true}
//	{"cmd":"exit"}
package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/linkerd/linkerd2-proxy-api/go/destination"
	"github.com/linkerd/linkerd2-proxy-api/go/inbound"
	"github.com/linkerd/linkerd2-proxy-api/go/net"
	"github.com/linkerd/linkerd2-proxy-api/go/outbound"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

type scaleService struct {
	Authority string `json:"authority"`
	IP        string `json:"ip"`
	Port      uint32 `json:"port"`
}

type scalePod struct {
	Ns   string `json:"ns"`
	Name string `json:"name"`
	Port uint32 `json:"port"`
}

type scaleCommand struct {
	Cmd         string         `json:"cmd"`
	Destination []string       `json:"destination"`
	Policy      []string       `json:"policy"`
	Clients     int            `json:"clients"`
	PodsPerConn int            `json:"podsPerConn"`
	Services    []scaleService `json:"services"`
	Pods        []scalePod     `json:"pods"`
	PodKeys     []string       `json:"podKeys"`
	Protocol    string         `json:"protocol"`
	Node        string         `json:"node"`
	// OpenTimeoutMs: how long "open" waits for every stream's first message before answering with the
	// counts so far (a subject that never answers some streams must not hang the run).
	OpenTimeoutMs int `json:"openTimeoutMs"`
}

func (c scaleCommand) name() string { return c.Cmd }

// counters of one kind of stream
type streamStats struct {
	Open    int `json:"open"`
	Ready   int `json:"ready"`
	Errors  int `json:"errors"`
	Reopens int `json:"reopens"`
	Gone    int `json:"gone"`
	// Why streams ended, by gRPC code ("Unavailable": 12), and the first message seen of each code.
	ErrorCodes    map[string]int    `json:"errorCodes,omitempty"`
	ErrorExamples map[string]string `json:"errorExamples,omitempty"`
}

// failed counts one ended stream under its gRPC code (the caller holds s.mu).
func (st *streamStats) failed(err error) {
	st.Errors++
	code := status.Code(err).String()
	if st.ErrorCodes == nil {
		st.ErrorCodes = map[string]int{}
		st.ErrorExamples = map[string]string{}
	}
	st.ErrorCodes[code]++
	if _, ok := st.ErrorExamples[code]; !ok && err != nil {
		st.ErrorExamples[code] = err.Error()
	}
}

type getStream struct {
	authority string
	view      map[string]bool
	seen      map[string]bool // addresses this stream has reported while recording
}

type inboundWatch struct {
	key      string // ns/pod
	protocol string // kind of the last Server received
}

type inboundExpectation struct {
	protocol string
	pods     map[string]bool
	pending  map[*inboundWatch]bool
	times    []float64
}

type scaleState struct {
	mu        sync.Mutex
	ctx       context.Context
	cancel    context.CancelFunc
	conns     []*grpc.ClientConn
	stats     map[string]*streamStats
	total     int
	ready     int
	expected  map[string]int
	readyMs   map[string]float64
	openedAt  time.Time
	readySent bool
	gets      []*getStream
	inbound   []*inboundWatch
	recording bool
	adds      map[string]map[string][]float64 // authority → ip → times
	expect    *inboundExpectation
}

func tcpAddr(a *net.TcpAddress) string {
	ip := a.GetIp()
	if ip == nil {
		return fmt.Sprintf("?:%d", a.GetPort())
	}
	if v4 := ip.GetIpv4(); v4 != 0 || ip.GetIpv6() == nil {
		return fmt.Sprintf("%s:%d", ipv4(v4), a.GetPort())
	}
	return fmt.Sprintf("[v6]:%d", a.GetPort())
}

func parseIPv4(s string) uint32 {
	var a, b, c, d uint32
	_, _ = fmt.Sscanf(s, "%d.%d.%d.%d", &a, &b, &c, &d)
	return a<<24 | b<<16 | c<<8 | d
}

func protocolKind(p *inbound.ProxyProtocol) string {
	switch p.GetKind().(type) {
	case *inbound.ProxyProtocol_Detect_:
		return "detect"
	case *inbound.ProxyProtocol_Opaque_:
		return "opaque"
	case *inbound.ProxyProtocol_Tls_:
		return "tls"
	case *inbound.ProxyProtocol_Http1_:
		return "http1"
	case *inbound.ProxyProtocol_Http2_:
		return "http2"
	case *inbound.ProxyProtocol_Grpc_:
		return "grpc"
	}
	return "none"
}

// first marks one stream's first message (once per stream, not per reopening) and says "ready" when all have one.
func (s *scaleState) first(kind string, counted *bool) {
	if *counted {
		return
	}
	*counted = true
	s.stats[kind].Ready++
	s.ready++
	if s.stats[kind].Ready == s.expected[kind] {
		s.readyMs[kind] = float64(time.Since(s.openedAt).Nanoseconds()) / 1e6
	}
	if s.ready == s.total && !s.readySent {
		s.sendReady(false)
	}
}

// sendReady answers "open" once: the streams with a first message so far, by kind.
func (s *scaleState) sendReady(incomplete bool) {
	s.readySent = true
	counts := map[string]int{}
	for k, st := range s.stats {
		counts[k] = st.Ready
	}
	msg := map[string]any{"ready": counts, "ms": float64(time.Since(s.openedAt).Nanoseconds()) / 1e6, "msByKind": s.readyMs}
	if incomplete {
		msg["incomplete"] = true
	}
	send(msg)
}

// keep runs open (one stream's whole life, returning when it fails) until the context ends, reopening
// after a backoff that starts at 100 ms and doubles to 3 s. goneOnNotFound: NotFound ends it (an inbound
// watch of a pod that was deleted: its proxy is gone with it).
func (s *scaleState) keep(ctx context.Context, stats *streamStats, goneOnNotFound bool, open func(attempt int) error) {
	delay := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		if attempt > 0 {
			stats.Reopens++
		}
		stats.Open++
		s.mu.Unlock()
		err := open(attempt)
		s.mu.Lock()
		stats.Open--
		if ctx.Err() != nil {
			s.mu.Unlock()
			return
		}
		if goneOnNotFound && status.Code(err) == codes.NotFound {
			stats.Gone++
			s.mu.Unlock()
			return
		}
		stats.failed(err)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		if delay < 3*time.Second {
			delay *= 2
		}
	}
}

func dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func (s *scaleState) open(c scaleCommand) {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	ctx := s.ctx
	s.stats = map[string]*streamStats{"get": {}, "outbound": {}, "inbound": {}}
	stats := s.stats
	s.openedAt = time.Now()
	s.readySent = false
	s.ready = 0
	s.adds = map[string]map[string][]float64{}
	clients := c.Clients
	if clients < 1 {
		clients = 1
	}
	perConn := c.PodsPerConn
	if perConn < 1 {
		perConn = 50
	}
	hasPolicy := len(c.Policy) > 0
	s.expected = map[string]int{"get": clients * len(c.Services)}
	if hasPolicy {
		s.expected["outbound"] = clients * len(c.Services)
		s.expected["inbound"] = len(c.Pods)
	}
	s.total = 0
	for _, n := range s.expected {
		s.total += n
	}
	s.readyMs = map[string]float64{}
	timeout := time.Duration(c.OpenTimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 180 * time.Second
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(timeout):
			s.mu.Lock()
			if !s.readySent {
				s.sendReady(true)
			}
			s.mu.Unlock()
		}
	}()
	// one connection per address per client (reopened streams go to the next address)
	connsTo := func(addrs []string) ([]*grpc.ClientConn, error) {
		out := make([]*grpc.ClientConn, len(addrs))
		for i, a := range addrs {
			conn, err := dial(a)
			if err != nil {
				return nil, err
			}
			out[i] = conn
			s.conns = append(s.conns, conn)
		}
		return out, nil
	}
	for ci := 0; ci < clients; ci++ {
		dst, err := connsTo(c.Destination)
		if err != nil {
			send(map[string]string{"error": err.Error()})
			return
		}
		var pol []*grpc.ClientConn
		if hasPolicy {
			if pol, err = connsTo(c.Policy); err != nil {
				send(map[string]string{"error": err.Error()})
				return
			}
		}
		// the node a client proxy runs on: Linkerd's destination looks it up (its zone) for every Get
		token := fmt.Sprintf(`{"ns":"bench-clients","nodeName":%q,"pod":"client-%d"}`, c.Node, ci)
		workload := fmt.Sprintf(`{"ns":"bench-clients","pod":"client-%d"}`, ci)
		for _, svc := range c.Services {
			g := &getStream{authority: svc.Authority, view: map[string]bool{}, seen: map[string]bool{}}
			s.gets = append(s.gets, g)
			go s.keep(ctx, stats["get"], false, func() func(int) error {
				counted := false
				return func(attempt int) error {
					client := destination.NewDestinationClient(dst[(ci+attempt)%len(dst)])
					stream, err := client.Get(ctx, &destination.GetDestination{Scheme: "k8s", Path: g.authority, ContextToken: token})
					if err != nil {
						return err
					}
					s.mu.Lock()
					g.view = map[string]bool{} // a new stream starts from its own snapshot
					s.mu.Unlock()
					for {
						u, err := stream.Recv()
						if err != nil {
							return err
						}
						t := nowMs()
						s.mu.Lock()
						s.first("get", &counted)
						switch {
						case u.GetAdd() != nil:
							for _, a := range u.GetAdd().GetAddrs() {
								addr := tcpAddr(a.GetAddr())
								g.view[addr] = true
								if s.recording && !g.seen[addr] {
									g.seen[addr] = true
									byIP := s.adds[g.authority]
									if byIP == nil {
										byIP = map[string][]float64{}
										s.adds[g.authority] = byIP
									}
									byIP[addr] = append(byIP[addr], t)
								}
							}
						case u.GetRemove() != nil:
							for _, a := range u.GetRemove().GetAddrs() {
								delete(g.view, tcpAddr(a))
							}
						case u.GetNoEndpoints() != nil:
							g.view = map[string]bool{}
						}
						s.mu.Unlock()
					}
				}
			}())
			if !hasPolicy {
				continue
			}
			target := &outbound.TrafficSpec{
				SourceWorkload: workload,
				Target: &outbound.TrafficSpec_Addr{Addr: &net.TcpAddress{
					Ip:   &net.IPAddress{Ip: &net.IPAddress_Ipv4{Ipv4: parseIPv4(svc.IP)}},
					Port: svc.Port,
				}},
			}
			go s.keep(ctx, stats["outbound"], false, func() func(int) error {
				counted := false
				return func(attempt int) error {
					client := outbound.NewOutboundPoliciesClient(pol[(ci+attempt)%len(pol)])
					stream, err := client.Watch(ctx, target)
					if err != nil {
						return err
					}
					for {
						if _, err := stream.Recv(); err != nil {
							return err
						}
						s.mu.Lock()
						s.first("outbound", &counted)
						s.mu.Unlock()
					}
				}
			}())
		}
	}
	if !hasPolicy {
		return
	}
	var pool [][]*grpc.ClientConn
	for i, p := range c.Pods {
		if i%perConn == 0 {
			conns, err := connsTo(c.Policy)
			if err != nil {
				send(map[string]string{"error": err.Error()})
				return
			}
			pool = append(pool, conns)
		}
		conns := pool[len(pool)-1]
		w := &inboundWatch{key: p.Ns + "/" + p.Name}
		s.inbound = append(s.inbound, w)
		spec := &inbound.PortSpec{Workload: fmt.Sprintf(`{"ns":%q,"pod":%q}`, p.Ns, p.Name), Port: p.Port}
		go s.keep(ctx, stats["inbound"], true, func() func(int) error {
			counted := false
			return func(attempt int) error {
				client := inbound.NewInboundServerPoliciesClient(conns[(i+attempt)%len(conns)])
				stream, err := client.WatchPort(ctx, spec)
				if err != nil {
					return err
				}
				for {
					srv, err := stream.Recv()
					if err != nil {
						return err
					}
					t := nowMs()
					s.mu.Lock()
					s.first("inbound", &counted)
					w.protocol = protocolKind(srv.GetProtocol())
					if e := s.expect; e != nil && e.pending[w] && w.protocol == e.protocol {
						delete(e.pending, w)
						e.times = append(e.times, t)
						if len(e.pending) == 0 {
							send(map[string][]float64{"inboundTimes": e.times})
							s.expect = nil
						}
					}
					s.mu.Unlock()
				}
			}
		}())
	}
}

func (s *scaleState) views() map[string][]map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	type group struct {
		ips     []string
		streams int
	}
	byAuthority := map[string]map[string]*group{}
	for _, g := range s.gets {
		ips := make([]string, 0, len(g.view))
		for a := range g.view {
			ips = append(ips, a)
		}
		sort.Strings(ips)
		key := strings.Join(ips, ",")
		groups := byAuthority[g.authority]
		if groups == nil {
			groups = map[string]*group{}
			byAuthority[g.authority] = groups
		}
		if groups[key] == nil {
			groups[key] = &group{ips: ips}
		}
		groups[key].streams++
	}
	out := map[string][]map[string]any{}
	for a, groups := range byAuthority {
		for _, g := range groups {
			out[a] = append(out[a], map[string]any{"ips": g.ips, "streams": g.streams})
		}
	}
	return out
}

func scaleStreams() {
	s := &scaleState{ctx: context.Background(), cancel: func() {}, stats: map[string]*streamStats{}}
	serve(map[string]bool{"started": true}, func(c scaleCommand) {
		switch c.Cmd {
		case "open":
			s.mu.Lock()
			s.open(c)
			s.mu.Unlock()
		case "record":
			s.mu.Lock()
			s.recording = true
			for _, g := range s.gets {
				g.seen = map[string]bool{}
				for a := range g.view {
					g.seen[a] = true // already there: not a change to time
				}
			}
			s.mu.Unlock()
			send(map[string]bool{"recording": true})
		case "adds":
			s.mu.Lock()
			type add struct {
				Authority string    `json:"authority"`
				IP        string    `json:"ip"`
				Times     []float64 `json:"times"`
			}
			out := []add{}
			for a, byIP := range s.adds {
				for ip, times := range byIP {
					out = append(out, add{a, ip, times})
				}
			}
			s.adds = map[string]map[string][]float64{}
			s.mu.Unlock()
			send(map[string]any{"adds": out})
		case "expectInbound":
			s.mu.Lock()
			e := &inboundExpectation{protocol: c.Protocol, pods: map[string]bool{}, pending: map[*inboundWatch]bool{}}
			for _, k := range c.PodKeys {
				e.pods[k] = true
			}
			for _, w := range s.inbound {
				if e.pods[w.key] && w.protocol != c.Protocol {
					e.pending[w] = true
				}
			}
			s.expect = e
			send(map[string]bool{"armed": true})
			if len(e.pending) == 0 {
				send(map[string][]float64{"inboundTimes": {}})
				s.expect = nil
			}
			s.mu.Unlock()
		case "views":
			send(map[string]any{"views": s.views()})
		case "stats":
			s.mu.Lock()
			send(map[string]any{"stats": s.stats})
			s.mu.Unlock()
		case "close":
			s.mu.Lock()
			s.cancel()
			for _, conn := range s.conns {
				_ = conn.Close()
			}
			s.conns = nil
			s.gets = nil
			s.inbound = nil
			s.recording = false
			s.expect = nil
			s.mu.Unlock()
			send(map[string]bool{"closed": true})
		}
	})
}
