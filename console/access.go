package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Access says who may use a console. Listen enforces it on every request
// but /healthz (which says only that the process is up, to any load
// balancer or probe):
//
//   - The Host header must name this machine as a browser reaching it
//     directly does: a local name (localhost, 127.0.0.1, [::1]), an IP
//     address, the host the console listens on, or one of AllowedHosts.
//     Any other name (rebind.attacker.example) is refused with 403: a page
//     that resolves its own name to 127.0.0.1 (DNS rebinding) cannot read
//     the console through the operator's browser.
//   - With a Token, a request must carry it: "Authorization: Bearer TOKEN",
//     or the cookie a browser gets by opening any page once with
//     ?token=TOKEN; else 401.
type Access struct {
	Token        string
	AllowedHosts []string
}

// Console is what Listen serves: a Server or a GroupServer.
type Console interface {
	// Handler is the console's routes, without the checks of Access
	// (Listen adds them).
	Handler() http.Handler
	access() Access
}

func (s *Server) access() Access      { return s.Access }
func (s *GroupServer) access() Access { return s.Access }

// The limits of the console's HTTP server. No reply streams: the longest,
// a simulation, takes well under a second.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 30 * time.Second
	maxHeaderBytes    = 16 << 10
	maxBodyBytes      = 64 << 10
)

// tokenCookie is the cookie that carries the token for a browser.
const tokenCookie = "weir_token"

// ConnLimit is how many connections a console serves at once: a quarter of
// the file descriptors the process may open (RLIMIT_NOFILE), from 64 to
// 1024 (256 where the limit is not known). More wait in the kernel's queue
// without costing the job a descriptor, so that clients, idle or not,
// cannot take the ones its checkpoints and outputs need.
func ConnLimit() int {
	n := fileLimit() / 4
	if n <= 0 {
		return 256
	}
	return min(max(n, 64), 1024)
}

// Listen serves the console on addr (host:port) until ctx is done, with the
// checks of its Access and the server's limits (timeouts, header and body
// sizes, ConnLimit connections).
func Listen(ctx context.Context, addr string, s Console) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot serve the console on %s: %w", addr, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	g := &guard{next: s.Handler(), access: s.access(), hosts: map[string]bool{"localhost": true}}
	for _, h := range append([]string{host}, s.access().AllowedHosts...) {
		if h = normalHost(h); h != "" {
			g.hosts[h] = true
		}
	}
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	ll := newLimitListener(l, ConnLimit())
	if js, ok := s.(*Server); ok {
		go js.Record(ctx)
	}
	go func() {
		if err := srv.Serve(ll); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ll.Close()
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return l.Addr(), nil
}

// ExposureWarning is what weir says at start when a console listens on
// addr beyond this machine's loopback with no token, or "".
func ExposureWarning(addr string, a Access) string {
	if a.Token != "" {
		return ""
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); host == "localhost" || ip != nil && ip.IsLoopback() {
		return ""
	}
	where := "every interface of this machine"
	if host != "" && !net.ParseIP(strings.Trim(host, "[]")).IsUnspecified() {
		where = host
	}
	return fmt.Sprintf("warning: the console on %s listens on %s without a token: whoever reaches it reads the job's status and settings; set http.token (or listen on 127.0.0.1)", addr, where)
}

// guard applies an Access to every request but /healthz and /readyz.
type guard struct {
	next   http.Handler
	access Access
	hosts  map[string]bool // allowed names, normalised
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		g.next.ServeHTTP(w, r)
		return
	}
	if h := normalHost(r.Host); !g.hosts[h] && net.ParseIP(h) == nil {
		http.Error(w, fmt.Sprintf("weir: the console does not answer for host %q (add it to http.allowed_hosts)", h), http.StatusForbidden)
		return
	}
	if tok := g.access.Token; tok != "" {
		if q := r.URL.Query(); q.Has("token") && r.Method == http.MethodGet && same(q.Get("token"), tok) {
			// A browser opening a page with the token: a cookie for the
			// rest, and the page again without the token in its address.
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: url.QueryEscape(tok), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if !g.carriesToken(r, tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			http.Error(w, "weir: the console needs its token: Authorization: Bearer TOKEN, or open a page once with ?token=TOKEN", http.StatusUnauthorized)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

func (g *guard) carriesToken(r *http.Request, tok string) bool {
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(strings.TrimSpace(a), tok) {
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		v, _ := url.QueryUnescape(c.Value)
		return same(v, tok)
	}
	return false
}

// same compares a token in constant time.
func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// normalHost is a host name as the allow-list compares it: without port or
// brackets, lower-case.
func normalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// healthz answers /healthz: the process is up.
func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

// limitListener accepts at most n connections at a time: Accept waits
// for one to close before it takes the next from the kernel's queue.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
