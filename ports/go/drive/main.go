// Command drive runs the Go port of fair-share against a URL, replays an event script, or
// reads the answers fixture (ports/README.md, "The drivers"):
//
//	drive --url URL --processes P --threads T --seconds S [--quota Q --period SECS]
//	      [--group NAME] [--param name=value …] [--via transport]
//	drive --replay SCRIPT.json
//	drive --answers answers.json
//
// Its P processes are real OS processes (the driver runs itself again for each, with
// --child), each with one FairShare shared by T goroutines, every goroutine on its own
// keep-alive connection. With --via transport the goroutines send through the package's
// http.RoundTripper instead (transport.go: one Transport per process, its slots the law's
// threads, the connections its base http.Transport's), and the line says "go-transport".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"throttlesim/fairshare"
)

type counts struct {
	Requests        int64 `json:"requests"`
	OK              int64 `json:"ok"`
	Limited         int64 `json:"limited"`
	Errors          int64 `json:"errors"`
	TransportErrors int64 `json:"transport_errors"`
}

// answered counts one answered request by its class.
func (c *counts) answered(class fairshare.Class) {
	c.Requests++
	switch class {
	case fairshare.ClassOK:
		c.OK++
	case fairshare.ClassLimited:
		c.Limited++
	default:
		c.Errors++
	}
}

// add adds another's counts to these.
func (c *counts) add(o counts) {
	c.Requests += o.Requests
	c.OK += o.OK
	c.Limited += o.Limited
	c.Errors += o.Errors
	c.TransportErrors += o.TransportErrors
}

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "drive: "+format+"\n", a...)
	os.Exit(2)
}

func main() {
	args := os.Args[1:]
	var (
		url, group             = "", ""
		via                    string
		processes, threads     = 1, 1
		seconds, quota, period float64
		replay, answers        string
		child                  = -1
		deadline               int64
		params                 []string
	)
	next := func(i *int, name string) string {
		*i++
		if *i >= len(args) {
			die("%s needs a value", name)
		}
		return args[*i]
	}
	num := func(s, name string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			die("%s: %v", name, err)
		}
		return v
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "--url":
			url = next(&i, a)
		case "--processes":
			processes = int(num(next(&i, a), a))
		case "--threads":
			threads = int(num(next(&i, a), a))
		case "--seconds":
			seconds = num(next(&i, a), a)
		case "--quota":
			quota = num(next(&i, a), a)
		case "--period":
			period = num(next(&i, a), a)
		case "--group":
			group = next(&i, a)
		case "--via":
			via = next(&i, a)
			if via != "transport" {
				die("--via %s: only transport", via)
			}
		case "--param":
			params = append(params, next(&i, a))
		case "--replay":
			replay = next(&i, a)
		case "--answers":
			answers = next(&i, a)
		case "--child":
			child = int(num(next(&i, a), a))
		case "--deadline":
			deadline = int64(num(next(&i, a), a))
		default:
			die("unknown argument %s", a)
		}
	}
	port := "go"
	if via != "" {
		port = "go-transport"
	}
	if group == "" {
		group = port
	}
	switch {
	case replay != "":
		doReplay(replay)
	case answers != "":
		doAnswers(answers)
	case url == "":
		die("--url, --replay or --answers is needed")
	case child >= 0:
		p := lawParams(quota, period, params)
		var c counts
		if via != "" {
			c = runTransport(url, group, child, threads, p, deadline)
		} else {
			c = run(url, group, child, threads, p, deadline)
		}
		json.NewEncoder(os.Stdout).Encode(c)
	default:
		if processes < 1 || threads < 1 || seconds <= 0 {
			die("--processes, --threads and --seconds must be positive")
		}
		lawParams(quota, period, params) // refuse bad ones before starting
		parent(port, via, url, group, processes, threads, seconds, quota, period, params)
	}
}

func lawParams(quota, period float64, params []string) fairshare.Params {
	p := fairshare.DefaultParams()
	if quota > 0 || period > 0 {
		if err := p.SetParam("quota", quota); err != nil {
			die("%v", err)
		}
		if err := p.SetParam("period", period); err != nil {
			die("%v", err)
		}
	}
	for _, kv := range params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			die("--param %s: name=value", kv)
		}
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "s"), 64)
		if err != nil {
			die("--param %s: %v", kv, err)
		}
		if err := p.SetParam(k, f); err != nil {
			die("%v", err)
		}
	}
	if _, err := fairshare.New(1, p, nil); err != nil {
		die("%v", err)
	}
	return p
}

func parent(port, via, url, group string, processes, threads int, seconds, quota, period float64, params []string) {
	self, err := os.Executable()
	if err != nil {
		die("%v", err)
	}
	deadline := time.Now().Add(time.Duration(seconds * 1e9)).UnixNano()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := 0; p < processes; p++ {
		a := []string{"--url", url, "--threads", strconv.Itoa(threads), "--group", group,
			"--child", strconv.Itoa(p), "--deadline", strconv.FormatInt(deadline, 10)}
		if quota > 0 || period > 0 {
			a = append(a, "--quota", strconv.FormatFloat(quota, 'g', -1, 64), "--period", strconv.FormatFloat(period, 'g', -1, 64))
		}
		for _, kv := range params {
			a = append(a, "--param", kv)
		}
		if via != "" {
			a = append(a, "--via", via)
		}
		cmd := exec.Command(self, a...)
		out := &strings.Builder{}
		cmd.Stdout = out
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			die("starting process %d: %v", p, err)
		}
		cmds = append(cmds, cmd)
		outs = append(outs, out)
	}
	var total counts
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			fmt.Fprintf(os.Stderr, "drive: process %d: %v\n", i, err)
		}
		var c counts
		if err := json.Unmarshal([]byte(outs[i].String()), &c); err == nil {
			total.add(c)
		}
	}
	line, _ := json.Marshal(struct {
		Port      string `json:"port"`
		Follows   string `json:"follows"`
		Processes int    `json:"processes"`
		Threads   int    `json:"threads"`
		counts
	}{port, fairshare.Follows, processes, threads, total})
	fmt.Println(string(line))
	if total.Requests < 1 {
		os.Exit(1)
	}
}

// run is one process: T goroutines sharing one law until the deadline (Unix ns).
func run(url, group string, proc, threads int, p fairshare.Params, deadline int64) counts {
	law, err := fairshare.New(threads, p, nil)
	if err != nil {
		die("%v", err)
	}
	start := time.Now()
	clock := func() int64 { return int64(time.Since(start)) }
	end := time.Unix(0, deadline)
	var mu sync.Mutex
	var total counts
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1,
				DisableCompression: true}, Timeout: 60 * time.Second}
			id := fmt.Sprintf("%s/p%d/t%d", group, proc, t)
			var c counts
			for {
				for {
					w := law.WaitNs(t, clock())
					if w <= 0 {
						break
					}
					if time.Now().Add(time.Duration(w)).After(end) {
						goto done
					}
					time.Sleep(time.Duration(w))
				}
				if !time.Now().Before(end) {
					break
				}
				sent := clock()
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("X-Client-Id", id)
				resp, err := client.Do(req)
				status := 0
				var headers [][2]string
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
					for k, vs := range resp.Header {
						for _, v := range vs {
							headers = append(headers, [2]string{k, v})
						}
					}
				}
				now := clock()
				a := fairshare.ReadAnswer(status, headers, time.Now().UnixNano())
				law.ObserveNs(t, now, a, now-sent)
				if status == 0 {
					c.TransportErrors++
					continue
				}
				c.answered(a.Class)
			}
		done:
			mu.Lock()
			total.add(c)
			mu.Unlock()
		}(t)
	}
	wg.Wait()
	return total
}

// runTransport is one process sending through a fairshare.Transport: T goroutines share it
// (and its law) until the deadline (Unix ns). A request still waiting at the deadline is
// withdrawn unsent, by its context; one already handed to the connection is finished, so that
// what the driver counts is what the server counted.
func runTransport(url, group string, proc, threads int, p fairshare.Params, deadline int64) counts {
	law, err := fairshare.New(threads, p, nil)
	if err != nil {
		die("%v", err)
	}
	// No http.Client.Timeout: it would count the law's wait too.
	base := &http.Transport{MaxIdleConnsPerHost: threads, MaxConnsPerHost: threads, DisableCompression: true,
		ResponseHeaderTimeout: 60 * time.Second}
	client := &http.Client{Transport: fairshare.NewTransport(law, gate{base})}
	end := time.Unix(0, deadline)
	var mu sync.Mutex
	var total counts
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			id := fmt.Sprintf("%s/p%d/t%d", group, proc, t)
			var c counts
			for time.Now().Before(end) {
				status, headers, err := sendUnlessEnded(client, url, id, end)
				if errors.Is(err, errEnded) {
					break
				}
				if err != nil {
					c.TransportErrors++
					continue
				}
				c.answered(fairshare.ReadAnswer(status, headers, time.Now().UnixNano()).Class)
			}
			mu.Lock()
			total.add(c)
			mu.Unlock()
		}(t)
	}
	wg.Wait()
	return total
}

// errEnded is a request the deadline withdrew before it was sent.
var errEnded = errors.New("the run ended before this request was sent")

// sendState is one request's: whether its connection took it, or the deadline withdrew it.
type sendState struct {
	mu            sync.Mutex
	handed, ended bool
	cancel        context.CancelFunc
}

type sendKey struct{}

// gate sits between the Transport and the connections: it hands a request on only if the
// deadline has not withdrawn it, and marks it handed, past withdrawing.
type gate struct{ base http.RoundTripper }

func (g gate) RoundTrip(req *http.Request) (*http.Response, error) {
	s := req.Context().Value(sendKey{}).(*sendState)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errEnded
	}
	s.handed = true
	s.mu.Unlock()
	return g.base.RoundTrip(req)
}

// sendUnlessEnded sends one GET through client, withdrawn if it has not reached the
// connection by end; its body is read and dropped. A withdrawn request's error is errEnded.
func sendUnlessEnded(client *http.Client, url, id string, end time.Time) (int, [][2]string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &sendState{cancel: cancel}
	withdraw := time.AfterFunc(time.Until(end), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.handed {
			s.ended = true
			s.cancel()
		}
	})
	defer withdraw.Stop()
	req, _ := http.NewRequestWithContext(context.WithValue(ctx, sendKey{}, s), "GET", url, nil)
	req.Header.Set("X-Client-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		s.mu.Lock()
		ended := s.ended
		s.mu.Unlock()
		if ended {
			return 0, nil, errEnded
		}
		return 0, nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var headers [][2]string
	for k, vs := range resp.Header {
		for _, v := range vs {
			headers = append(headers, [2]string{k, v})
		}
	}
	return resp.StatusCode, headers, nil
}

func doReplay(path string) {
	s, err := fairshare.LoadScript(path)
	if err != nil {
		die("%v", err)
	}
	waits, err := fairshare.Replay(s)
	if err != nil {
		die("%v", err)
	}
	parts := make([]string, len(waits))
	for i, w := range waits {
		parts[i] = strconv.FormatInt(w, 10)
	}
	fmt.Printf("{\"waits\":[%s]}\n", strings.Join(parts, ","))
}

func doAnswers(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	var fx struct {
		Answers []struct {
			Status  int         `json:"status"`
			Wall    int64       `json:"wall"`
			Headers [][2]string `json:"headers"`
		} `json:"answers"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		die("%v", err)
	}
	parts := make([]string, len(fx.Answers))
	for i, a := range fx.Answers {
		parts[i] = fairshare.ReadingJSON(fairshare.ReadAnswer(a.Status, a.Headers, a.Wall))
	}
	fmt.Printf("{\"readings\":[%s]}\n", strings.Join(parts, ","))
}
