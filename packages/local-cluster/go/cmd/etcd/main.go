// etcd, built unchanged from go.etcd.io/etcd/server/v3 (as upstream server/main.go does).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
