package parquet

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
)

// fakeS3 is an S3 server in the test's process (gofakes3, in memory), with
// a bucket "lake": no real object store can run here.
type fakeS3 struct {
	URL string
	c   *minio.Core
}

// newFakeS3 starts one for the test.
func newFakeS3(t testing.TB) *fakeS3 { return newFakeS3Failing(t, nil) }

// newFakeS3Failing starts one whose requests go through fail first: a
// request it answers (it returns true) does not reach the store.
func newFakeS3Failing(t testing.TB, fail func(w http.ResponseWriter, r *http.Request) bool) *fakeS3 {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	store := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail != nil && fail(w, r) {
			return
		}
		store.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	// MinIO's client reads the bucket back: another implementation of
	// S3's API than the output's.
	c, err := minio.NewCore(strings.TrimPrefix(srv.URL, "http://"), &minio.Options{Creds: credentials.NewStaticV4("weir", "secret", ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeS3{URL: srv.URL, c: c}
}

// settings are an output's settings for the bucket under prefix, staging
// in staging.
func (f *fakeS3) settings(prefix, staging string, parts ...string) plan.Values {
	return plan.Values{"dir": "s3://lake/" + prefix, "staging": staging, "partition_by": parts,
		"s3": map[string]string{"endpoint": f.URL, "path_style": "true", "access_key_id": "weir", "secret_access_key": "secret"}}
}

// objects are the bucket's object names, sorted.
func (f *fakeS3) objects(t testing.TB) []string {
	t.Helper()
	var out []string
	for o := range f.c.Client.ListObjects(ctx, "lake", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		out = append(out, o.Key)
	}
	slices.Sort(out)
	return out
}

// uploads are the keys of the bucket's uploads in progress, sorted.
func (f *fakeS3) uploads(t testing.TB) []string {
	t.Helper()
	r, err := f.c.ListMultipartUploads(ctx, "lake", "", "", "", "", 1000)
	if minio.ToErrorResponse(err).Code == "NoSuchUpload" {
		return nil // gofakes3's answer for a bucket that never had one
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range r.Uploads {
		out = append(out, u.Key)
	}
	slices.Sort(out)
	return out
}

// download copies the bucket's objects under prefix into dir, each at its
// name relative to the prefix.
func (f *fakeS3) download(t testing.TB, prefix, dir string) {
	t.Helper()
	for _, key := range f.objects(t) {
		rel, ok := strings.CutPrefix(key, prefix+"/")
		if !ok {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := f.c.Client.FGetObject(ctx, "lake", key, dst, minio.GetObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func newS3Sink(t testing.TB, f *fakeS3, staging string, checkpointed bool, parts ...string) *Sink {
	t.Helper()
	c, err := Parse(f.settings("orders", staging, parts...))
	if err != nil {
		t.Fatal(err)
	}
	sh := shape
	ks, err := c.New(plan.Env{Job: "orders", Field: "output", Checkpointed: checkpointed, Shape: &sh, Log: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	return ks.(*Sink)
}

// With checkpoints, a part file is uploaded at the barrier as a multipart
// upload no reader sees, and appears whole, at its final name, only when
// the checkpoint commits; committing again changes nothing; the local
// staging directory is left empty.
func TestS3ObjectsAppearOnlyAtCommit(t *testing.T) {
	f := newFakeS3(t)
	staging := t.TempDir()
	s := newS3Sink(t, f, staging, true, "date")
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 2, int64(30)), pane("c2", at(13, 10), 1, 2.5)}); err != nil {
		t.Fatal(err)
	}
	if got := files(t, staging); len(got) != 1 || !strings.HasSuffix(got[0], ".inprogress") {
		t.Fatalf("staging before the barrier: %v", got)
	}
	s.remote.partSize = 1000 // a file of several parts
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	key := "orders/date=2026-12-05/part-" + s.task + "-0.parquet"
	if got := f.objects(t); len(got) != 0 {
		t.Fatalf("objects before the commit: %v", got)
	}
	if got, want := f.uploads(t), []string{key}; !slices.Equal(got, want) {
		t.Fatalf("uploads before the commit: %v, want %v", got, want)
	}
	if got := files(t, staging); len(got) != 0 {
		t.Fatalf("staging after the upload: %v", got)
	}
	if n := strings.Count(string(pre), `"etag"`); n < 3 {
		t.Fatalf("the pre-commit names %d parts, want several: %s", n, pre)
	}
	for range 2 { // the engine's commit, then a restore's
		if err := s.Commit(ctx, 1, pre); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f.objects(t), []string{key}; !slices.Equal(got, want) {
		t.Fatalf("objects after the commit: %v, want %v", got, want)
	}
	if got := f.uploads(t); len(got) != 0 {
		t.Fatalf("uploads after the commit: %v", got)
	}
	local := t.TempDir()
	f.download(t, "orders", local)
	want := []string{row("c1", at(13, 0), 2, "30", "30"), row("c2", at(13, 10), 1, "2.5", "2.5")}
	if got := rows(t, filepath.Join(local, "date=2026-12-05", "part-"+s.task+"-0.parquet")); !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %q\nwant %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A crash after the barrier: the restore completes the checkpoint's upload
// once and aborts the upload started after it; a part file of the next
// run is numbered after the checkpoint's.
func TestS3RestoreCompletesPendingAndAbortsLater(t *testing.T) {
	f := newFakeS3(t)
	staging := t.TempDir()
	s := newS3Sink(t, f, staging, true)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	mark0 := s.Mark()
	if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 2, int64(30))}); err != nil {
		t.Fatal(err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// After the barrier: a file the next checkpoint's barrier uploaded,
	// and one still in staging, when the process dies.
	if err := s.Write(ctx, []plan.Item{pane("c9", at(13, 10), 9, int64(9))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PreCommit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []plan.Item{pane("c8", at(13, 20), 8, int64(8))}); err != nil {
		t.Fatal(err)
	}
	task := s.task
	k := func(n string) string { return "orders/part-" + task + "-" + n + ".parquet" }
	if got, want := f.uploads(t), []string{k("0"), k("1")}; !slices.Equal(got, want) {
		t.Fatalf("uploads before the crash: %v, want %v", got, want)
	}
	// kill -9: no Close, no Commit; checkpoint 2 never became durable.

	var log strings.Builder
	c, err := Parse(f.settings("orders", staging))
	if err != nil {
		t.Fatal(err)
	}
	sh := shape
	ks, err := c.New(plan.Env{Job: "orders", Field: "output", Checkpointed: true, Shape: &sh, Log: func(s string) { log.WriteString(s + "\n") }})
	if err != nil {
		t.Fatal(err)
	}
	s2 := ks.(*Sink)
	if err := s2.Open(ctx, connector.Resume{From: 1, Pending: []connector.PreCommit{{Checkpoint: 1, Data: pre}}, Mark: mark0}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.uploads(t), []string{k("0")}; !slices.Equal(got, want) {
		t.Fatalf("uploads after the restore's open: %v, want %v", got, want)
	}
	if got := files(t, staging); len(got) != 0 {
		t.Fatalf("staging after the restore's open: %v", got)
	}
	if want := "aborted the upload of s3://lake/" + k("1") + ", started after the checkpoint the job resumes from"; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log.String())
	}
	for range 2 {
		if err := s2.Commit(ctx, 1, pre); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f.objects(t), []string{k("0")}; !slices.Equal(got, want) {
		t.Fatalf("objects after the commit: %v, want %v", got, want)
	}
	if err := s2.Write(ctx, []plan.Item{pane("c2", at(13, 30), 1, int64(5))}); err != nil {
		t.Fatal(err)
	}
	pre2, err := s2.PreCommit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(ctx, 2, pre2); err != nil {
		t.Fatal(err)
	}
	if got, want := f.objects(t), []string{k("0"), k("1")}; !slices.Equal(got, want) {
		t.Fatalf("objects: %v, want %v", got, want)
	}
	local := t.TempDir()
	f.download(t, "orders", local)
	if got, want := rows(t, filepath.Join(local, "part-"+task+"-1.parquet")), []string{row("c2", at(13, 30), 1, "5", "5")}; !slices.Equal(got, want) {
		t.Fatalf("rows of the next run's file:\n got %q\nwant %q", got, want)
	}
	// The upload a checkpoint holds, gone from the store (a lifecycle
	// rule aborted it): the commit fails, permanently, and says so.
	gone := strings.Replace(string(pre2), `"n":1`, `"n":7`, 1)
	err = s2.Commit(ctx, 3, []byte(gone))
	if err == nil || connector.Retryable(err) || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("committing an upload the store does not know: %v", err)
	}
}

// Without checkpoints, a part file is uploaded and completed when it rolls
// and when the job ends; a final object that exists is never written over:
// the next part file takes the next number.
func TestS3WithoutCheckpoints(t *testing.T) {
	f := newFakeS3(t)
	staging := t.TempDir()
	s := newS3Sink(t, f, staging, false)
	task := s.task
	if _, err := f.c.PutObject(ctx, "lake", "orders/part-"+task+"-0.parquet", strings.NewReader("not weir's"), 10, "", "", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 2, int64(30))}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.objects(t), []string{"orders/part-" + task + "-0.parquet", "orders/part-" + task + "-1.parquet"}; !slices.Equal(got, want) {
		t.Fatalf("objects: %v, want %v", got, want)
	}
	o, err := f.c.Client.GetObject(ctx, "lake", "orders/part-"+task+"-0.parquet", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 32)
	n, _ := o.Read(b)
	if string(b[:n]) != "not weir's" {
		t.Fatalf("the object weir did not write holds %q", b[:n])
	}
	if got := f.uploads(t); len(got) != 0 {
		t.Fatalf("uploads: %v", got)
	}
	if got := files(t, staging); len(got) != 0 {
		t.Fatalf("staging: %v", got)
	}
}

// The settings of an output to object storage: refused where they do not
// fit, and the secrets said as such.
func TestS3Settings(t *testing.T) {
	for _, c := range []struct {
		v    plan.Values
		want string
	}{
		{plan.Values{"dir": "s3://"}, "names no bucket"},
		{plan.Values{"dir": "lake", "s3": map[string]string{"region": "x"}}, "only for a dir of s3://"},
		{plan.Values{"dir": "lake", "staging": "x"}, "only for a dir of s3://"},
		{plan.Values{"dir": "s3://b/p", "s3": map[string]string{"endpoint": "ftp://x"}}, "endpoint: expected a host"},
		{plan.Values{"dir": "s3://b/p", "s3": map[string]string{"path_style": "yes"}}, "path_style: expected true or false"},
		{plan.Values{"dir": "s3://b/p", "s3": map[string]string{"access_key_id": "a"}}, "go together"},
		{plan.Values{"dir": "s3://b/p", "s3": map[string]string{"bucket": "a"}}, `unknown setting "bucket"`},
	} {
		_, err := Parse(c.v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.v, err, c.want)
		}
	}
	c, err := Parse(plan.Values{"dir": "s3://b//p/q/", "s3": map[string]string{"endpoint": "https://store.example:9000/", "access_key_id": "a", "secret_access_key": "sk", "session_token": "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{c.Writes(), c.Target(), c.S3.Endpoint, c.S3.Region, strings.Join(c.Secrets(), ",")}; !slices.Equal(got, []string{"parquet s3://b/p/q", "s3://b/p/q", "store.example:9000", "us-east-1", "a,sk,tok"}) || !c.S3.Secure {
		t.Fatalf("got %q (secure %v)", got, c.S3.Secure)
	}
	t.Setenv("AWS_REGION", "")
	c, err = Parse(plan.Values{"dir": "s3://b", "s3": map[string]string{"region": "eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.S3.Endpoint != "s3.eu-west-1.amazonaws.com" || !c.S3.Secure {
		t.Fatalf("the default endpoint of eu-west-1: %s (secure %v)", c.S3.Endpoint, c.S3.Secure)
	}
}

// roundTrip is an http.RoundTripper that keeps the requests and answers
// each with an empty 200.
type roundTrip struct{ reqs []*http.Request }

func (r *roundTrip) RoundTrip(req *http.Request) (*http.Response, error) {
	r.reqs = append(r.reqs, req)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: req}, nil
}

// The requests are signed as S3 says: the examples of AWS's documentation
// of Signature Version 4 for S3 ("Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk", the
// examples GET Bucket Lifecycle and Get Bucket (List Objects)), made with
// the documentation's keys and time, give its signatures.
func TestS3RequestsSignedAsAWSDocumentsThem(t *testing.T) {
	s, err := parseS3URL("s3://examplebucket")
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoint, s.Region, s.AccessKey, s.secretKey = "s3.amazonaws.com", "us-east-1", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	o, err := newObjects(s)
	if err != nil {
		t.Fatal(err)
	}
	rt := &roundTrip{}
	o.hc = &http.Client{Transport: rt}
	o.now = func() time.Time { return time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		query url.Values
		url   string
		sig   string
	}{
		{url.Values{"lifecycle": {""}}, "https://examplebucket.s3.amazonaws.com/?lifecycle=", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
		{url.Values{"max-keys": {"2"}, "prefix": {"J"}}, "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
	} {
		if _, err := o.do(ctx, "example", http.MethodGet, "", c.query, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
		req := rt.reqs[len(rt.reqs)-1]
		want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + c.sig
		if got := req.Header.Get("Authorization"); req.URL.String() != c.url || got != want {
			t.Errorf("%s:\n got %s\nwant %s", req.URL, got, want)
		}
	}
	// An object's name is sent as S3 signs it: = and % escaped.
	if _, err := o.do(ctx, "example", http.MethodHead, "lake/card=c%2F7/part-1.parquet", nil, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := rt.reqs[len(rt.reqs)-1].URL.String(), "https://examplebucket.s3.amazonaws.com/lake/card%3Dc%252F7/part-1.parquet"; got != want {
		t.Errorf("sent to %s, want %s", got, want)
	}
}

// Without checkpoints, a part file whose upload the store fails (a 503 at
// its completion) is not lost: the error is returned, and the next Flush
// completes it; the object then holds the file's rows, once.
func TestS3WithoutCheckpointsRetriesAFailedUpload(t *testing.T) {
	completions := 0
	f := newFakeS3Failing(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && r.URL.Query().Has("uploadId") {
			if completions++; completions == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
				return true
			}
		}
		return false
	})
	staging := t.TempDir()
	s := newS3Sink(t, f, staging, false)
	s.cfg.RollInterval = time.Nanosecond // every Flush closes the open files
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	// The write closes the file (open for its roll interval), and its
	// upload fails.
	err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 2, int64(30))})
	if err == nil || !connector.Retryable(err) || !strings.Contains(err.Error(), "SlowDown: Please reduce your request rate. (HTTP 503)") {
		t.Fatalf("the write: %v", err)
	}
	if got := f.objects(t); len(got) != 0 {
		t.Fatalf("objects after the failure: %v", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	key := "orders/part-" + s.task + "-0.parquet"
	if got := f.objects(t); !slices.Equal(got, []string{key}) || len(f.uploads(t)) != 0 {
		t.Fatalf("objects %v, uploads %v", got, f.uploads(t))
	}
	local := t.TempDir()
	f.download(t, "orders", local)
	if got, want := rows(t, filepath.Join(local, "part-"+s.task+"-0.parquet")), []string{row("c1", at(13, 0), 2, "30", "30")}; !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %q\nwant %q", got, want)
	}
}

// weir lint's probe of an output to object storage: the bucket there and
// answering is no finding; a bucket that is not, or credentials the store
// refuses, are said with the store's words.
func TestS3Probe(t *testing.T) {
	f := newFakeS3Failing(t, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/denied") {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`)
			return true
		}
		return false
	})
	for _, c := range []struct{ dir, want string }{
		{"s3://lake/orders", ""},
		{"s3://nothere/orders", "listing s3://nothere/orders: NoSuchBucket"},
		{"s3://denied/orders", "listing s3://denied/orders: InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records. (HTTP 403)"},
	} {
		v := f.settings("", "")
		v["dir"] = c.dir
		delete(v, "staging")
		cfg, err := Parse(v)
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Probe(ctx)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.dir, err, c.want)
		}
	}
}
