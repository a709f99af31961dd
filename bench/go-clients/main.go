// The benches' load generators in Go, written against linkerd2-proxy-api's generated Go clients on
// grpc-go, as Linkerd's own figures in packages/destination/README.md and packages/identity/README.md
// were measured:
//
//	go-clients destination-streams   Get streams for bench/destination (see destination.go)
//	go-clients identity-certify      Certify callers for bench/identity and bench/scale (see identity.go)
//	go-clients scale-streams         a simulated mesh's discovery streams for bench/scale (see scale.go)
//
// Each is driven by JSON lines on stdin and answers JSON lines on stdout, the protocol of its Node
// counterpart (bench/destination/streams.mjs, bench/identity/certify-load.mjs). Built once per source
// into ~/.cache/minimesh/bin by bench/lib/go-build.ts.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

var outMu sync.Mutex

// send writes one JSON line to stdout; safe from any goroutine.
func send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func nowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

// command is what serve reads from each line: a JSON object whose "cmd" names the command.
type command interface{ name() string }

// serve announces `hello`, then reads one command of type C per line and hands it to handle, until
// {"cmd":"exit"} or EOF. A line that is not such a command is answered with an error.
func serve[C command](hello any, handle func(c C)) {
	send(hello)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var c C
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			send(map[string]string{"error": "bad command: " + err.Error()})
			continue
		}
		if c.name() == "exit" {
			os.Exit(0)
		}
		handle(c)
	}
}

func main() {
	if len(os.Args) == 2 {
		switch os.Args[1] {
		case "destination-streams":
			destinationStreams()
			return
		case "identity-certify":
			identityCertify()
			return
		case "scale-streams":
			scaleStreams()
			return
		}
	}
	fmt.Fprintln(os.Stderr, "usage: go-clients destination-streams | identity-certify | scale-streams (JSON lines on stdin; see main.go)")
	os.Exit(2)
}
