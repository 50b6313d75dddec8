package parquet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go/aws-http-auth/credentials"
	"github.com/aws/smithy-go/aws-http-auth/sigv4"
	v4 "github.com/aws/smithy-go/aws-http-auth/v4"

	"github.com/weirstream/weir/connector"
)

// S3 is where an output whose dir is an s3:// URL puts its part files: a
// bucket and a prefix of an S3-compatible object store, and the local
// directory the part files are written in before they are uploaded.
type S3 struct {
	// Bucket and Prefix are the URL's (s3://bucket/prefix): the final
	// objects are named PREFIX/FOLDERS/part-TASK-N.parquet.
	Bucket, Prefix string
	// Endpoint is the store's host (and port); Secure says it speaks
	// HTTPS. AWS's of the region (s3.REGION.amazonaws.com, HTTPS) unless
	// s3.endpoint says.
	Endpoint string
	Secure   bool
	// Region is the bucket's region (us-east-1 unless s3.region or
	// AWS_REGION says).
	Region string
	// PathStyle asks for path-style requests (http://host/bucket/key),
	// which an endpoint other than AWS's gets anyway; AWS's gets
	// virtual-hosted ones (http://bucket.host/key) unless it is set.
	PathStyle bool
	// AccessKey is the access key id; with it, secretKey and
	// sessionToken. Without it the credentials are the environment's
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
	AccessKey               string
	secretKey, sessionToken string
}

// URL is the output's URL: s3://bucket/prefix.
func (s *S3) URL() string {
	if s.Prefix == "" {
		return "s3://" + s.Bucket
	}
	return "s3://" + s.Bucket + "/" + s.Prefix
}

// parseS3URL reads s3://bucket/prefix.
func parseS3URL(u string) (*S3, error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return nil, fmt.Errorf("expected s3://bucket/prefix, got %q", u)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("%q names no bucket: expected s3://bucket/prefix", u)
	}
	prefix = strings.Trim(path.Clean("/"+prefix), "/")
	return &S3{Bucket: bucket, Prefix: prefix, Secure: true, Region: os.Getenv("AWS_REGION")}, nil
}

// set reads one of the s3 settings.
func (s *S3) set(k, v string) error {
	switch k {
	case "endpoint":
		if !strings.Contains(v, "://") {
			s.Endpoint, s.Secure = v, true
			break
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("endpoint: expected a host (s3.eu-west-1.amazonaws.com, 127.0.0.1:9000) or an http(s) URL of one, got %q", v)
		}
		s.Endpoint, s.Secure = u.Host, u.Scheme == "https"
	case "region":
		s.Region = v
	case "path_style":
		switch v {
		case "true":
			s.PathStyle = true
		case "false":
			s.PathStyle = false
		default:
			return fmt.Errorf("path_style: expected true or false, got %q", v)
		}
	case "access_key_id":
		s.AccessKey = v
	case "secret_access_key":
		s.secretKey = v
	case "session_token":
		s.sessionToken = v
	default:
		return fmt.Errorf("unknown setting %q; expected endpoint, region, path_style, access_key_id, secret_access_key or session_token", k)
	}
	return nil
}

// check says what the settings lack, and gives those not given their
// defaults: the region us-east-1, the endpoint AWS's of the region.
func (s *S3) check() error {
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	if s.Endpoint == "" {
		s.Endpoint = "s3." + s.Region + ".amazonaws.com"
	}
	if (s.AccessKey == "") != (s.secretKey == "") {
		return errors.New("access_key_id and secret_access_key go together")
	}
	if s.sessionToken != "" && s.AccessKey == "" {
		return errors.New("session_token needs access_key_id and secret_access_key")
	}
	return nil
}

// secrets are the settings a front door hides.
func (s *S3) secrets() []string {
	var out []string
	for _, v := range []string{s.AccessKey, s.secretKey, s.sessionToken} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// objects is an S3 output's store: the bucket under the output's prefix,
// spoken to in S3's REST API, each request signed with AWS Signature
// Version 4 by AWS's own signer (github.com/aws/smithy-go/aws-http-auth).
// It makes the seven requests the output needs and nothing else.
type objects struct {
	hc     *http.Client
	scheme string
	host   string
	path   bool // path-style requests
	bucket string
	prefix string
	region string
	creds  credentials.Credentials
	signer *sigv4.Signer
	// partSize is the size of the parts of an upload (UploadPartBytes;
	// tests make it smaller).
	partSize int64
	// now is the clock of the signatures (tests set it).
	now func() time.Time
}

// remotePart is an uploaded part of a part file.
type remotePart struct {
	N    int    `json:"n"`
	ETag string `json:"etag"`
}

// UploadPartBytes is the size of the parts a part file is uploaded in
// (the last is smaller; a file of more than 10,000 of them, S3's limit,
// takes larger ones).
const UploadPartBytes = 16 << 20

// newObjects is the store of s. Its credentials are the settings', else
// the environment's.
func newObjects(s *S3) (*objects, error) {
	creds := credentials.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.secretKey, SessionToken: s.sessionToken}
	if creds.AccessKeyID == "" {
		creds = credentials.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: os.Getenv("AWS_SESSION_TOKEN")}
		if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
			return nil, errors.New("no credentials: give s3.access_key_id and s3.secret_access_key (${VAR}), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
		}
	}
	scheme := "https"
	if !s.Secure {
		scheme = "http"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Minute
	return &objects{
		hc: &http.Client{Transport: tr}, scheme: scheme, host: s.Endpoint, path: s.PathStyle || !strings.HasSuffix(hostOnly(s.Endpoint), "amazonaws.com"),
		bucket: s.Bucket, prefix: s.Prefix, region: s.Region, creds: creds, partSize: UploadPartBytes, now: time.Now,
		signer: sigv4.New(func(o *v4.SignerOptions) {
			// As S3 wants: the path signed as sent, and the payload's hash
			// in a header of its own.
			o.DisableDoublePathEscape = true
			o.AddPayloadHashHeader = true
		}),
	}, nil
}

// hostOnly is an endpoint without its port.
func hostOnly(endpoint string) string {
	if h, _, err := net.SplitHostPort(endpoint); err == nil {
		return h
	}
	return endpoint
}

// listPrefix is what a listing of the output's objects asks for: the
// prefix as a folder ("" for the whole bucket).
func (o *objects) listPrefix() string {
	if o.prefix == "" {
		return ""
	}
	return o.prefix + "/"
}

// key is the object name of a file of a partition folder.
func (o *objects) key(dir, name string) string {
	return strings.TrimPrefix(path.Join(o.prefix, dir, name), "/")
}

// name is an object's name relative to the prefix: its folders and its
// base name.
func (o *objects) name(key string) (dir, base string) {
	rel := key
	if o.prefix != "" {
		rel = strings.TrimPrefix(key, o.prefix+"/")
	}
	dir, base = path.Split(rel)
	return strings.TrimSuffix(dir, "/"), base
}

// s3Error is a request's failure as the store says it.
type s3Error struct {
	Op      string `xml:"-"`
	Status  int    `xml:"-"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func (e *s3Error) Error() string {
	msg := e.Code
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Op, msg, e.Status)
}

// Retryable implements connector.Retryable's classification: the store's
// own failures, throttling and timeouts heal; a refusal does not.
func (e *s3Error) Retryable() bool {
	switch e.Code {
	case "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable":
		return true
	}
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout
}

// emptyHash is the SHA-256 of no bytes.
var emptyHash = sha256.Sum256(nil)

// do makes one signed request: method on key (empty: the bucket) with the
// query, and the body of size bytes whose SHA-256 is hash (none: no body).
// A response of status 300 or more is an *s3Error; so is one of 200 whose
// body is S3's <Error> (a completion that failed after it began). The
// caller closes the body of the response returned.
func (o *objects) do(ctx context.Context, op, method, key string, query url.Values, body io.Reader, size int64, hash []byte) (*http.Response, error) {
	u := &url.URL{Scheme: o.scheme, Host: o.host, Path: "/" + key, RawQuery: query.Encode()}
	if o.path {
		u.Path = "/" + o.bucket + "/" + key
	} else {
		u.Host = o.bucket + "." + o.host
	}
	u.RawPath = escapePath(u.Path)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	if body == nil {
		hash = emptyHash[:]
	}
	if err := o.signer.SignRequest(&sigv4.SignRequestInput{Request: req, PayloadHash: hash, Credentials: o.creds, Service: "s3", Region: o.region, Time: o.now()}); err != nil {
		return nil, err
	}
	resp, err := o.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if resp.StatusCode < 300 && !(method == http.MethodPost && query.Has("uploadId")) {
		return resp, nil
	}
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	e := &s3Error{Op: op, Status: resp.StatusCode}
	if resp.StatusCode < 300 {
		// A completion answers 200 at once, and says in the body whether
		// it succeeded.
		var root struct{ XMLName xml.Name }
		if rerr == nil && xml.Unmarshal(b, &root) == nil && root.XMLName.Local != "Error" {
			resp.Body = io.NopCloser(bytes.NewReader(b))
			return resp, nil
		}
		e.Status = http.StatusInternalServerError
	}
	xml.Unmarshal(b, e)
	return nil, e
}

// escapePath escapes an object's path as S3 signs it: every byte but the
// unreserved ones and the slashes as %XX.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// decode reads a response's XML body into v.
func decode(resp *http.Response, op string, v any) error {
	defer resp.Body.Close()
	if err := xml.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s: the store's answer: %w", op, err)
	}
	return nil
}

// upload uploads a local file as the parts of a multipart upload of key,
// which it does not complete: until complete, no reader sees the object.
func (o *objects) upload(ctx context.Context, local, key string) (string, []remotePart, error) {
	f, err := os.Open(local)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	op := "starting the upload of " + key
	resp, err := o.do(ctx, op, http.MethodPost, key, url.Values{"uploads": {""}}, nil, 0, nil)
	if err != nil {
		return "", nil, err
	}
	var started struct {
		UploadID string `xml:"UploadId"`
	}
	if err := decode(resp, op, &started); err != nil {
		return "", nil, err
	}
	if started.UploadID == "" {
		return "", nil, fmt.Errorf("%s: the store gave no upload id", op)
	}
	id := started.UploadID
	size := fi.Size()
	partSize := max(o.partSize, (size+9999)/10000)
	var parts []remotePart
	for off, n := int64(0), 1; off < size || n == 1; off, n = off+partSize, n+1 {
		l := min(partSize, size-off)
		// Hashed first, so that the part is sent from the file as it is,
		// in one request whose signature covers the hash (which the store
		// checks), never held in memory.
		sh := sha256.New()
		if _, err := io.Copy(sh, io.NewSectionReader(f, off, l)); err != nil {
			return id, parts, err
		}
		op := fmt.Sprintf("uploading part %d of %s", n, key)
		q := url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {id}}
		resp, err := o.do(ctx, op, http.MethodPut, key, q, io.NopCloser(io.NewSectionReader(f, off, l)), l, sh.Sum(nil))
		if err != nil {
			return id, parts, err
		}
		resp.Body.Close()
		etag := resp.Header.Get("ETag")
		if etag == "" {
			return id, parts, fmt.Errorf("%s: the store gave no ETag", op)
		}
		parts = append(parts, remotePart{N: n, ETag: etag})
	}
	return id, parts, nil
}

// completion is CompleteMultipartUpload's body.
type completion struct {
	XMLName xml.Name `xml:"CompleteMultipartUpload"`
	Parts   []struct {
		PartNumber int
		ETag       string
	} `xml:"Part"`
}

// complete completes the upload of key, so that the object appears whole.
// It is idempotent: an upload the store no longer knows whose object is
// there was completed already.
func (o *objects) complete(ctx context.Context, key, id string, parts []remotePart) error {
	var c completion
	for _, p := range parts {
		c.Parts = append(c.Parts, struct {
			PartNumber int
			ETag       string
		}{p.N, p.ETag})
	}
	body, err := xml.Marshal(c)
	if err != nil {
		return err
	}
	hash := sha256.Sum256(body)
	op := "completing the upload of " + key
	resp, err := o.do(ctx, op, http.MethodPost, key, url.Values{"uploadId": {id}}, bytes.NewReader(body), int64(len(body)), hash[:])
	if err == nil {
		resp.Body.Close()
		return nil
	}
	var se *s3Error
	if errors.As(err, &se) && se.Code == "NoSuchUpload" {
		if ok, herr := o.exists(ctx, key); herr != nil {
			return herr
		} else if ok {
			return nil // completed already
		}
		return connector.Permanent(fmt.Errorf("the upload of %s, which a checkpoint holds, is gone (aborted, or expired by the bucket's lifecycle rules), and the object is not there", key))
	}
	return err
}

// exists says whether the object key is there.
func (o *objects) exists(ctx context.Context, key string) (bool, error) {
	resp, err := o.do(ctx, "looking for "+key, http.MethodHead, key, nil, nil, 0, nil)
	var se *s3Error
	switch {
	case err == nil:
		resp.Body.Close()
		return true, nil
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		return false, nil
	}
	return false, err
}

// abort aborts an upload.
func (o *objects) abort(ctx context.Context, key, id string) error {
	resp, err := o.do(ctx, "aborting the upload of "+key, http.MethodDelete, key, url.Values{"uploadId": {id}}, nil, 0, nil)
	var se *s3Error
	switch {
	case err == nil:
		resp.Body.Close()
	case errors.As(err, &se) && se.Code == "NoSuchUpload":
	default:
		return err
	}
	return nil
}

// upload is an upload in progress.
type upload struct{ key, id string }

// list lists the objects under the prefix whose base names match, and the
// uploads in progress of such names.
func (o *objects) list(ctx context.Context, match func(base string) bool) (finals map[string]bool, uploads []upload, err error) {
	prefix := o.listPrefix()
	finals = map[string]bool{}
	op := "listing s3://" + o.bucket + "/" + prefix
	for token := ""; ; {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := o.do(ctx, op, http.MethodGet, "", q, nil, 0, nil)
		if err != nil {
			return nil, nil, err
		}
		var page struct {
			IsTruncated           bool
			NextContinuationToken string
			Contents              []struct{ Key string }
		}
		if err := decode(resp, op, &page); err != nil {
			return nil, nil, err
		}
		for _, c := range page.Contents {
			if _, base := o.name(c.Key); match(base) {
				finals[c.Key] = true
			}
		}
		if !page.IsTruncated || page.NextContinuationToken == "" {
			break
		}
		token = page.NextContinuationToken
	}
	op = "listing the uploads in progress in s3://" + o.bucket + "/" + prefix
	for keyMarker, idMarker := "", ""; ; {
		q := url.Values{"uploads": {""}, "prefix": {prefix}}
		if keyMarker != "" {
			q.Set("key-marker", keyMarker)
			q.Set("upload-id-marker", idMarker)
		}
		resp, err := o.do(ctx, op, http.MethodGet, "", q, nil, 0, nil)
		var se *s3Error
		if errors.As(err, &se) && se.Code == "NoSuchUpload" {
			// Some stores say so of a bucket that never had an upload.
			return finals, uploads, nil
		}
		if err != nil {
			return nil, nil, err
		}
		var page struct {
			IsTruncated        bool
			NextKeyMarker      string
			NextUploadIDMarker string `xml:"NextUploadIdMarker"`
			Uploads            []struct {
				Key      string
				UploadID string `xml:"UploadId"`
			} `xml:"Upload"`
		}
		if err := decode(resp, op, &page); err != nil {
			return nil, nil, err
		}
		for _, u := range page.Uploads {
			if _, base := o.name(u.Key); match(base) {
				uploads = append(uploads, upload{key: u.Key, id: u.UploadID})
			}
		}
		if !page.IsTruncated || page.NextKeyMarker == "" {
			return finals, uploads, nil
		}
		keyMarker, idMarker = page.NextKeyMarker, page.NextUploadIDMarker
	}
}

// openRemote is Open's part for an output to object storage: it lists the
// objects and uploads of the output's final part-file names, aborts the
// uploads started after the checkpoint the job resumes from (no pending
// pre-commit names them, their numbers are at least the checkpoint's
// counter), and returns the objects committed after it.
func (s *Sink) openRemote(ctx context.Context, r connector.Resume, names partNames, pending map[string]bool) (later []string, err error) {
	final := func(base string) (uint64, bool) {
		n, inProgress, ok := names.number(base)
		return n, ok && !inProgress
	}
	finals, uploads, err := s.remote.list(ctx, func(base string) bool {
		_, ok := final(base)
		return ok
	})
	if err != nil {
		return nil, err
	}
	s.finals = finals
	for key := range finals {
		_, base := s.remote.name(key)
		if n, _ := final(base); r.Resumed() && n >= s.next {
			later = append(later, s.cfg.S3.objectURL(key))
		}
	}
	for _, u := range uploads {
		_, base := s.remote.name(u.key)
		n, _ := final(base)
		switch {
		case pending[u.id]:
		case r.Resumed() && n >= s.next:
			// Started after the checkpoint this run resumes from: weir's
			// own, and no checkpoint holds it.
			if err := s.remote.abort(ctx, u.key, u.id); err != nil {
				return nil, err
			}
			s.logf("aborted the upload of %s, started after the checkpoint the job resumes from", s.cfg.S3.objectURL(u.key))
		default:
			s.logf("left the upload of %s in progress (id %s): no checkpoint proves it weir's; no reader sees it, and the bucket's lifecycle rules or an abort remove it", s.cfg.S3.objectURL(u.key), u.id)
		}
	}
	return later, nil
}

// objectURL is the URL of an object of the bucket.
func (s *S3) objectURL(key string) string { return "s3://" + s.Bucket + "/" + key }

// finalExists says whether the final name of a part file is taken.
func (s *Sink) finalExists(dir string, n uint64) bool {
	if s.remote != nil {
		return s.finals[s.remote.key(dir, s.finalName(n))]
	}
	_, err := os.Lstat(s.path(dir, s.finalName(n)))
	return !errors.Is(err, fs.ErrNotExist)
}

// stage uploads a closed part file as a multipart upload that its
// checkpoint's commit completes, and removes the local file: from now on
// the upload holds it.
func (s *Sink) stage(ctx context.Context, f *fileRef) error {
	if f.Upload != "" {
		return nil // staged by a pre-commit that failed before
	}
	tmp := s.path(f.Dir, s.tmpName(f.N))
	key := s.remote.key(f.Dir, s.finalName(f.N))
	id, parts, err := s.remote.upload(ctx, tmp, key)
	if err != nil {
		if id != "" {
			if aerr := s.remote.abort(ctx, key, id); aerr != nil {
				s.logf("%v", aerr)
			}
		}
		return err
	}
	f.Upload, f.Parts = id, parts
	s.finals[key] = true
	return os.Remove(tmp)
}

// put uploads the closed part files of an output without checkpoints and
// completes their uploads at once, then removes the local files. A file
// whose upload failed stays in unput, with what of it was done, and is
// tried again first by the next Write, Flush or Close: its rows are in no
// other file.
func (s *Sink) put(ctx context.Context) error {
	for len(s.unput) > 0 {
		f := &s.unput[0]
		if err := s.stage(ctx, f); err != nil {
			return err
		}
		if err := s.remote.complete(ctx, s.remote.key(f.Dir, s.finalName(f.N)), f.Upload, f.Parts); err != nil {
			return err
		}
		s.unput = s.unput[1:]
	}
	return nil
}

// completeUpload completes the upload of a pre-committed part file.
func (s *Sink) completeUpload(ctx context.Context, task string, f fileRef) error {
	return s.remote.complete(ctx, s.remote.key(f.Dir, finalName(task, f.N)), f.Upload, f.Parts)
}

// Probe implements plan.Prober: for an output to object storage, it lists
// one object under the prefix, with the output's credentials, so that a
// missing bucket, refused credentials or a store that does not answer are
// said before a run. A local directory is not probed.
func (c *Config) Probe(ctx context.Context) error {
	if c.S3 == nil {
		return nil
	}
	o, err := newObjects(c.S3)
	if err != nil {
		return err
	}
	prefix := o.listPrefix()
	resp, err := o.do(ctx, "listing "+c.S3.URL(), http.MethodGet, "", url.Values{"list-type": {"2"}, "prefix": {prefix}, "max-keys": {"1"}}, nil, 0, nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
