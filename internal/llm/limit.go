package llm

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrResponseTooLarge is a model answer whose body passed
// Config.MaxResponseBytes: the read stops there, so a misbehaving or
// hostile endpoint cannot make rein hold an unbounded body in memory.
var ErrResponseTooLarge = errors.New("llm: response body too large")

// DefaultMaxResponseBytes bounds a model response body (8 MiB: a chat
// answer is kilobytes).
const DefaultMaxResponseBytes = 8 << 20

// limitClient returns an HTTP client whose response bodies fail with
// ErrResponseTooLarge past max bytes. The base client's transport,
// timeout and redirect policy are kept.
func limitClient(base *http.Client, max int64) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = limitTransport{rt: rt, max: max}
	return c
}

type limitTransport struct {
	rt  http.RoundTripper
	max int64
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes announced, the limit is %d", ErrResponseTooLarge, resp.ContentLength, t.max)
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

// limitedBody reads at most left bytes, then fails.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
