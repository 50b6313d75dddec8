//go:build release

package main

import (
	"fmt"
	"io"
)

// The release build (go build -tags release, as .ci/release does) leaves out
// two commands a user running jobs does not need: weir bench (it runs from
// a clone, where its peers and inputs are) and weir kafka (a development
// broker). Together they are 5.3 MB of the binary. Each still answers, and
// says where it went.

const benchMoved = `weir bench is not in the release build of weir: it runs from a clone of the
repository, where its peers are:
  go run ./cmd/weir bench
(see docs/performance.md)`

const kafkaMoved = `weir kafka (the development Kafka broker) is not in the release build of weir:
from a clone of the repository, run
  go run ./cmd/weir kafka
or point the job at a Kafka broker of your own (see docs/connectors.md)`

func cmdBench(args []string, stdout, stderr io.Writer) int {
	return moved("weir bench", benchMoved, stderr)
}

func cmdKafka(args []string, stdout, stderr io.Writer) int {
	return moved("weir kafka", kafkaMoved, stderr)
}

// moved answers a command that the release build leaves out: it says where
// the command went and exits 2.
func moved(name, where string, stderr io.Writer) int {
	newFlagSet(name, stderr)
	fmt.Fprintln(stderr, where)
	return 2
}
