// Command etcd is the etcd server that backs the test kube-apiserver of the local stack.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
