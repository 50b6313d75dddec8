package mqtttest

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// A port another process took after it was found free is said so
// (syscall.EADDRINUSE), for Start to take another: mosquitto, which cannot
// bind it, is not taken for up because something accepts there.
func TestPortTakenInBetween(t *testing.T) {
	bin, err := Bin()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	b, err := start(bin, t.TempDir(), l.Addr().(*net.TCPAddr).Port, 0)
	if !errors.Is(err, syscall.EADDRINUSE) {
		if b != nil {
			b.Stop()
		}
		t.Fatalf("mosquitto on a port taken: %v", err)
	}
	b, err = Start(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Stop()
}
