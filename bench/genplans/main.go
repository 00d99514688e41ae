// Command genplans writes a tree of plan files for timing the plan loader
// (and jetctl lint) on a large configuration:
//
//	go run ./bench/genplans -files 100 -streams 50 -out DIR
//	jetctl plan -f DIR
//
// Each stream has 1 to 3 subjects of its own, a retention, max_age,
// storage and replicas, and 1 or 2 consumers (ack_policy explicit,
// max_deliver, a filter_subject, sometimes a backoff); each file also
// declares a few KV buckets. The same flags give the same files
// (pkg/plan/plangen, which BenchmarkLoad100x50 uses too).
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/jetctl/jetctl/pkg/plan/plangen"
)

func main() {
	o := plangen.Options{}
	flag.IntVar(&o.Files, "files", 100, "plan files to write")
	flag.IntVar(&o.Streams, "streams", 50, "streams in each file")
	flag.IntVar(&o.KV, "kv", 5, "KV buckets in each file")
	flag.Int64Var(&o.Seed, "seed", 1, "random seed")
	flag.BoolVar(&o.SingleServer, "single-server", false, "one replica for every stream (a third have 3 otherwise), for a server that is not clustered")
	out := flag.String("out", "", "directory to write the files to (required)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		log.Fatal("usage: genplans [-files N] [-streams N] [-kv N] [-seed N] [-single-server] -out DIR")
	}
	if err := plangen.Write(*out, o); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d files, %d streams, %d KV buckets in %s\n", o.Files, o.Files*o.Streams, o.Files*o.KV, *out)
}
