package fairshare

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"
)

// quickLaw is a law of `threads` threads on a quota far above what a test sends (a thousand a
// second), with no jitter: its own pacing delays a request by a millisecond at most, so a
// longer delay is one an answer asked for.
func quickLaw(t *testing.T, threads int, tune func(*Params)) *FairShare {
	t.Helper()
	p := DefaultParams()
	p.Quota, p.Period = 1000, 1
	p.Jitter, p.RetryJitter = 0, 0
	if tune != nil {
		tune(&p)
	}
	law, err := New(threads, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return law
}

func get(t *testing.T, client *http.Client, url string) (int, error) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A 429 with Retry-After: 1 holds the next request back for that second.
func TestTransportWaitsOutARetryAfter(t *testing.T) {
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		first := len(arrivals) == 1
		mu.Unlock()
		w.Header().Set("RateLimit-Policy", "1000;w=1")
		if first {
			w.Header().Set("RateLimit", "limit=1000, remaining=0, reset=1")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("RateLimit", "limit=1000, remaining=999, reset=1")
	}))
	defer srv.Close()
	client := &http.Client{Transport: NewTransport(quickLaw(t, 1, nil), nil)}

	if status, err := get(t, client, srv.URL); err != nil || status != 429 {
		t.Fatalf("first answer: %d %v", status, err)
	}
	if status, err := get(t, client, srv.URL); err != nil || status != 200 {
		t.Fatalf("second answer: %d %v", status, err)
	}
	gap := arrivals[1].Sub(arrivals[0])
	if gap < 950*time.Millisecond || gap > 1500*time.Millisecond {
		t.Fatalf("the second request came %v after the refused one, not the second Retry-After asked", gap)
	}
}

// No more requests are in flight at once than the law has threads, however many goroutines
// send through it.
func TestTransportBoundsConcurrency(t *testing.T) {
	var mu sync.Mutex
	inFlight, most, served := 0, 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		if inFlight > most {
			most = inFlight
		}
		mu.Unlock()
		time.Sleep(40 * time.Millisecond)
		mu.Lock()
		inFlight--
		served++
		mu.Unlock()
		w.Header().Set("RateLimit", "limit=1000, remaining=900, reset=1")
	}))
	defer srv.Close()
	const threads, goroutines, each = 3, 12, 3
	base := &http.Transport{MaxIdleConnsPerHost: threads}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: NewTransport(quickLaw(t, threads, nil), base)}

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < each; k++ {
				if _, err := get(t, client, srv.URL); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if served != goroutines*each {
		t.Fatalf("served %d of %d", served, goroutines*each)
	}
	if most != threads {
		t.Fatalf("%d requests were in flight at once; the law has %d threads", most, threads)
	}
}

// A server that is gone: the error is the one the caller gets, and it reaches the law, which
// holds the slot back for its error backoff before the next request (to a server that answers).
func TestTransportTellsTheLawATransportError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	url := srv.URL
	srv.Close()
	law := quickLaw(t, 1, func(p *Params) { p.ErrorBackoff = 0.4 })
	client := &http.Client{Transport: NewTransport(law, nil)}

	_, err := get(t, client, url)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("expected the dial's refusal, got %v", err)
	}
	law.mu.Lock()
	errCount := law.errs[0]
	law.mu.Unlock()
	if errCount != 1 {
		t.Fatalf("the law counted %d errors on the slot, not 1", errCount)
	}
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	began := time.Now()
	if status, err := get(t, client, up.URL); err != nil || status != 200 {
		t.Fatalf("the next request: %d %v", status, err)
	}
	if took := time.Since(began); took < 380*time.Millisecond || took > time.Second {
		t.Fatalf("the next request took %v, not the 0.4 s backoff", took)
	}
}

// A request waiting out a long Retry-After, or waiting for a free slot, ends when its
// context does, with the context's error, and is never sent.
func TestTransportCancelEndsAWait(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		if r.URL.Path == "/slow" {
			<-release
			return
		}
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Transport: NewTransport(quickLaw(t, 1, nil), nil)}

	if status, err := get(t, client, srv.URL); err != nil || status != 429 {
		t.Fatalf("first answer: %d %v", status, err)
	}
	endsPromptly(t, client, srv.URL, "waiting out Retry-After: 30")

	// A fresh law whose one slot is taken by a request the server holds.
	client = &http.Client{Transport: NewTransport(quickLaw(t, 1, nil), nil)}
	go client.Get(srv.URL + "/slow")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := requests
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow request never reached the server")
		}
	}
	endsPromptly(t, client, srv.URL, "waiting for a slot")
	mu.Lock()
	defer mu.Unlock()
	if requests != 2 {
		t.Fatalf("the server saw %d requests; the cancelled ones must not be sent", requests)
	}
}

// endsPromptly sends a request whose context ends in 100 ms, while it must still be waiting:
// it returns the context's error well within a second.
func endsPromptly(t *testing.T, client *http.Client, url, waiting string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	began := time.Now()
	if _, err := client.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: expected the context's deadline, got %v", waiting, err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("%s: the cancelled wait took %v", waiting, took)
	}
}
