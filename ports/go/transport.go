package fairshare

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// Transport is an http.RoundTripper that sends every request through one FairShare: the
// law's threads are its slots, one per request in flight, so at most the law's thread count
// of requests are waiting or in flight at once and a request beyond that waits for a free
// slot. It waits as the law says before each send, and tells the law every answer and every
// transport error. Share one Transport among a process's goroutines, and give its law to no
// other Transport: each counts the law's time from its own start.
type Transport struct {
	law   *FairShare
	base  http.RoundTripper
	slots chan int
	start time.Time
}

// NewTransport sends through base (http.DefaultTransport when nil), paced by law; its
// concurrency is the law's thread count. base should keep as many idle connections per host
// as that (http.DefaultTransport keeps 2), or connections are opened again and again.
func NewTransport(law *FairShare, base http.RoundTripper) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	slots := make(chan int, law.n)
	for i := 0; i < law.n; i++ {
		slots <- i
	}
	return &Transport{law: law, base: base, slots: slots, start: time.Now()}
}

// now is the law's clock: nanoseconds on the monotonic clock since the Transport was made.
func (t *Transport) now() int64 { return int64(time.Since(t.start)) }

// RoundTrip takes a free slot, waits until the law lets that slot send, sends, and tells the
// law the answer. The wait sleeps holding only the slot, and asks the law again when it ends
// (another answer may have moved the pace meanwhile). The request's context ends either wait
// with its error, the request unsent. A transport error is told to the law as an answer with
// no status, then returned. The slot is freed when the response's body is closed or read to
// its end, so a slot stands for a connection in use.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var slot int
	select {
	case slot = <-t.slots:
	case <-ctx.Done():
		closeBody(req)
		return nil, ctx.Err()
	}
	for {
		w := t.law.WaitNs(slot, t.now())
		if w <= 0 {
			break
		}
		timer := time.NewTimer(time.Duration(w))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			t.slots <- slot
			closeBody(req)
			return nil, ctx.Err()
		}
	}
	sent := t.now()
	resp, err := t.base.RoundTrip(req)
	answered := t.now()
	if err != nil {
		t.law.ObserveNs(slot, answered, ReadAnswer(0, nil, time.Now().UnixNano()), answered-sent)
		t.slots <- slot
		return nil, err
	}
	var headers [][2]string
	for name, values := range resp.Header {
		for _, v := range values {
			headers = append(headers, [2]string{name, v})
		}
	}
	t.law.ObserveNs(slot, answered, ReadAnswer(resp.StatusCode, headers, time.Now().UnixNano()), answered-sent)
	resp.Body = &slotBody{ReadCloser: resp.Body, free: func() { t.slots <- slot }}
	return resp, nil
}

// closeBody closes a request's body, as a RoundTripper must even when it does not send it.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// slotBody frees its request's slot once: at the body's end or its Close, whichever is first.
type slotBody struct {
	io.ReadCloser
	once sync.Once
	free func()
}

func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.free)
	}
	return n, err
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.free)
	return err
}
