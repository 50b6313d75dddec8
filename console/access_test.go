package console

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// listen serves s on a port of 127.0.0.1 for the test.
func listen(t *testing.T, s Console) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a, err := Listen(ctx, "127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	return a.String()
}

// ask sends a GET for path to addr with the Host header host and the given
// headers, without following redirects; it returns the status, the body
// and the reply's headers.
func ask(t *testing.T, addr, host, path string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	cl := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header
}

// A request that names the console by another host name, as a page that
// rebinds its own name to 127.0.0.1 makes the browser do, is refused; the
// local names, IP addresses, the listen address and the allowed hosts are
// answered.
func TestHostAllowList(t *testing.T) {
	addr := listen(t, &Server{Access: Access{AllowedHosts: []string{"weir.example.com"}}})
	_, port, _ := net.SplitHostPort(addr)
	code, body, _ := ask(t, addr, "rebind.attacker.example:"+port, "/api/simulate")
	if code != http.StatusForbidden || body != `weir: the console does not answer for host "rebind.attacker.example" (add it to http.allowed_hosts)` {
		t.Errorf("DNS rebinding: %d %q", code, body)
	}
	for _, host := range []string{"localhost:" + port, "LOCALHOST", "127.0.0.1:" + port, "[::1]:" + port, "10.1.2.3:" + port, "weir.example.com", "Weir.Example.com:" + port, addr} {
		if code, body, _ := ask(t, addr, host, "/api/simulate"); code != http.StatusOK {
			t.Errorf("Host %s: %d %.80s", host, code, body)
		}
	}
	// /healthz answers whatever the host: probes name the machine as they
	// like.
	if code, body, _ := ask(t, addr, "probe.internal", "/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
}

// With a token, every request but /healthz must carry it: as a bearer
// token, or as the cookie a browser gets from opening a page with ?token=.
func TestTokenRequired(t *testing.T) {
	const tok = "s3cr3t/tok+en"
	addr := listen(t, &Server{Access: Access{Token: tok}})
	for _, path := range []string{"/api/simulate", "/simulator", "/api/status", "/metrics", "/", "/assets/style.css"} {
		code, body, h := ask(t, addr, "localhost", path)
		if code != http.StatusUnauthorized || body != "weir: the console needs its token: Authorization: Bearer TOKEN, or open a page once with ?token=TOKEN" || h.Get("WWW-Authenticate") != `Bearer realm="weir"` {
			t.Errorf("%s without the token: %d %q %v", path, code, body, h)
		}
		if code, _, _ := ask(t, addr, "localhost", path, "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d", path, code)
		}
	}
	if code, _, _ := ask(t, addr, "localhost", "/api/simulate", "Authorization", "Bearer "+tok); code != http.StatusOK {
		t.Errorf("with the token: %d", code)
	}
	if code, body, _ := ask(t, addr, "localhost", "/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz without the token: %d %q", code, body)
	}
	// The browser's way in.
	code, _, h := ask(t, addr, "localhost", "/simulator?size=30&token=s3cr3t%2Ftok%2Ben")
	cookie := h.Get("Set-Cookie")
	if code != http.StatusSeeOther || h.Get("Location") != "/simulator?size=30" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("?token=: %d %v", code, h)
	}
	if code, body, _ := ask(t, addr, "localhost", "/simulator", "Cookie", strings.Split(cookie, ";")[0]); code != http.StatusOK || !strings.Contains(body, "<title>") {
		t.Errorf("with the cookie: %d %.80s", code, body)
	}
	if code, _, _ := ask(t, addr, "localhost", "/simulator?token=wrong"); code != http.StatusUnauthorized {
		t.Errorf("?token=wrong: %d", code)
	}
	// The host check comes first: a rebound page learns nothing.
	if code, _, _ := ask(t, addr, "rebind.attacker.example", "/api/simulate", "Authorization", "Bearer "+tok); code != http.StatusForbidden {
		t.Errorf("rebinding with the token: %d", code)
	}
}

// A request header larger than the server takes is refused.
func TestRequestLimits(t *testing.T) {
	addr := listen(t, &Server{})
	if code, _, _ := ask(t, addr, "localhost", "/healthz", "X-Big", strings.Repeat("x", maxHeaderBytes+4096)); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 20 KiB header: %d", code)
	}
}

// At most ConnLimit connections are served at once; the next waits until
// one closes, and is then served.
func TestConnectionLimit(t *testing.T) {
	if n := ConnLimit(); n < 64 || n > 1024 {
		t.Fatalf("ConnLimit() = %d", n)
	}
	addr := listen(t, &Server{})
	var idle []net.Conn
	for range ConnLimit() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// Every slot is taken once each connection has been accepted: a
	// request of its own, answered, shows it was.
	for _, c := range idle {
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		buf := make([]byte, 512)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
			t.Fatalf("an idle connection's request: %v %q", err, buf[:n])
		}
	}
	next, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	io.WriteString(next, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	next.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 512)
	if n, err := next.Read(buf); err == nil {
		t.Fatalf("connection %d was served while %d others were open: %q", ConnLimit()+1, ConnLimit(), buf[:n])
	}
	idle[0].Close()
	next.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := next.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Errorf("after one closed: %v %q", err, buf[:n])
	}
	for _, c := range idle[1:] {
		c.Close()
	}
}

func TestExposureWarning(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "",
		"localhost:8080": "",
		"[::1]:8080":     "",
		":8080":          "warning: the console on :8080 listens on every interface of this machine without a token: whoever reaches it reads the job's status and settings; set http.token (or listen on 127.0.0.1)",
		"0.0.0.0:8080":   "warning: the console on 0.0.0.0:8080 listens on every interface of this machine without a token: whoever reaches it reads the job's status and settings; set http.token (or listen on 127.0.0.1)",
		"10.0.0.5:8080":  "warning: the console on 10.0.0.5:8080 listens on 10.0.0.5 without a token: whoever reaches it reads the job's status and settings; set http.token (or listen on 127.0.0.1)",
	} {
		if got := ExposureWarning(addr, Access{}); got != want {
			t.Errorf("%s: %q", addr, got)
		}
		if got := ExposureWarning(addr, Access{Token: "t"}); got != "" {
			t.Errorf("%s with a token: %q", addr, got)
		}
	}
}
