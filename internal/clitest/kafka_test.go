package clitest

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// A port another process took after it was found free fails the broker's
// start with EADDRINUSE, which StartBroker answers with another port
// (freeport.Start).
func TestBrokerPortTakenInBetween(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := &Broker{T: t, Port: l.Addr().(*net.TCPAddr).Port, Dir: t.TempDir()}
	if err := b.start("t:1"); !errors.Is(err, syscall.EADDRINUSE) {
		if err == nil {
			b.C.Close()
		}
		t.Fatalf("a broker on a port taken: %v", err)
	}
	if b := StartBroker(t, "t:1"); b.Addr == "" {
		t.Fatal("no broker")
	}
}
