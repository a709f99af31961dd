// destination-streams: Get streams spread over a few connections.
//
//	{"cmd":"open","port":P,"path":A,"contextToken":T,"streams":N,"connections":C}
//	                                                             → {"ready":N} once every stream has its snapshot
//	{"cmd":"expect","ip":"10.41.0.7"}                            → {"armed":true}, then {"times":[...]} when every
//	                                                               stream has the add of ip (ms since the epoch)
//	{"cmd":"close"}                                               → {"closed":true}
//	{"cmd":"exit"}
package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/linkerd/linkerd2-proxy-api/go/destination"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

type streamsCommand struct {
	Cmd         string `json:"cmd"`
	Port        int    `json:"port"`
	Path        string `json:"path"`
	Context     string `json:"contextToken"`
	Streams     int    `json:"streams"`
	Connections int    `json:"connections"`
	IP          string `json:"ip"`
}

func (c streamsCommand) name() string { return c.Cmd }

type expectation struct {
	ip    string
	seen  map[int]bool
	times []float64
}

func ipv4(n uint32) string { return fmt.Sprintf("%d.%d.%d.%d", n>>24, (n>>16)&255, (n>>8)&255, n&255) }

func destinationStreams() {
	var (
		mu      sync.Mutex
		waiting *expectation
		streams int
		conns   []*grpc.ClientConn
		cancel  context.CancelFunc = func() {}
	)
	open := func(c streamsCommand) {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		conns = make([]*grpc.ClientConn, c.Connections)
		for i := range conns {
			conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", c.Port), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				send(map[string]string{"error": err.Error()})
				return
			}
			conns[i] = conn
		}
		mu.Lock()
		streams = c.Streams
		mu.Unlock()
		ready := 0
		for i := 0; i < c.Streams; i++ {
			client := destination.NewDestinationClient(conns[i%len(conns)])
			go func(i int) {
				stream, err := client.Get(ctx, &destination.GetDestination{Scheme: "k8s", Path: c.Path, ContextToken: c.Context})
				if err != nil {
					send(map[string]string{"error": err.Error()})
					return
				}
				first := true
				for {
					u, err := stream.Recv()
					if err != nil {
						if ctx.Err() == nil {
							send(map[string]string{"error": err.Error()})
						}
						return
					}
					t := nowMs()
					mu.Lock()
					if first {
						first = false
						ready++
						if ready == c.Streams {
							send(map[string]int{"ready": ready})
						}
					}
					if w := waiting; w != nil && !w.seen[i] && u.GetAdd() != nil {
						for _, a := range u.GetAdd().GetAddrs() {
							if ipv4(a.GetAddr().GetIp().GetIpv4()) == w.ip {
								w.seen[i] = true
								w.times = append(w.times, t)
								if len(w.times) == streams {
									send(map[string][]float64{"times": w.times})
									waiting = nil
								}
								break
							}
						}
					}
					mu.Unlock()
				}
			}(i)
		}
	}

	serve(map[string]bool{"started": true}, func(c streamsCommand) {
		switch c.Cmd {
		case "open":
			open(c)
		case "expect":
			mu.Lock()
			waiting = &expectation{ip: c.IP, seen: map[int]bool{}}
			mu.Unlock()
			send(map[string]bool{"armed": true})
		case "close":
			cancel()
			for _, conn := range conns {
				_ = conn.Close()
			}
			conns = nil
			send(map[string]bool{"closed": true})
		}
	})
}
