package fairshare

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// expectedWaits derives each wait event's wait from the script itself: the scripts are
// closed-loop runs, so a thread's next event after a wait at t is a wait at t + w (w > 0)
// or its answer of the request sent at t (w = 0). A thread's last wait has no successor:
// its wait is only known to be above 0 (-1 here).
func expectedWaits(s *Script) []int64 {
	var exp []int64
	last := map[int]int{} // thread -> index into exp of its pending wait
	lastAt := map[int]int64{}
	for _, e := range s.Events {
		if j, ok := last[e.Thread]; ok {
			if e.Do == "wait" {
				exp[j] = e.At - lastAt[e.Thread]
			} else {
				exp[j] = 0
			}
			delete(last, e.Thread)
		}
		if e.Do == "wait" {
			last[e.Thread] = len(exp)
			lastAt[e.Thread] = e.At
			exp = append(exp, -1)
		}
	}
	return exp
}

func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("../scripts/*.json")
	if len(files) == 0 {
		t.Fatal("no scripts in ../scripts")
	}
	sort.Strings(files)
	for _, f := range files {
		f := f
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			s, err := LoadScript(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Replay(s)
			if err != nil {
				t.Fatal(err)
			}
			exp := expectedWaits(s)
			if len(got) != len(exp) {
				t.Fatalf("%d waits, want %d", len(got), len(exp))
			}
			wi := 0
			for ei, e := range s.Events {
				if e.Do != "wait" {
					continue
				}
				w := exp[wi]
				if w >= 0 && got[wi] != w {
					t.Fatalf("wait %d (event %d, thread %d, at %d ns): got %d ns, want %d", wi, ei, e.Thread, e.At, got[wi], w)
				}
				wi++
			}
		})
	}
}

type fixture struct {
	Answers []struct {
		Name    string          `json:"name"`
		Status  int             `json:"status"`
		Wall    int64           `json:"wall"`
		Headers [][2]string     `json:"headers"`
		Read    json.RawMessage `json:"read"`
	} `json:"answers"`
}

func decodeNum(b []byte) (interface{}, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v interface{}
	err := d.Decode(&v)
	return v, err
}

func TestAnswers(t *testing.T) {
	b, err := os.ReadFile("../answers.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx fixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, a := range fx.Answers {
		got := ReadingJSON(ReadAnswer(a.Status, a.Headers, a.Wall))
		g, err := decodeNum([]byte(got))
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		w, _ := decodeNum(a.Read)
		if !reflect.DeepEqual(g, w) {
			bad++
			t.Errorf("%s: read %s, want %s", a.Name, got, a.Read)
		}
	}
	if bad > 0 {
		t.Logf("%d of %d answers read otherwise", bad, len(fx.Answers))
	}
}

// TestScriptsAgainstCrate holds every wait, a thread's last included, to the crate's
// replay (`cargo run -p fair-share --example replay`, as docs/fair-share.md names it),
// where cargo and the repository's crate are at hand; skipped otherwise, and with -short.
func TestScriptsAgainstCrate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("cargo"); err != nil {
		t.Skip("no cargo")
	}
	if _, err := os.Stat("../../crates/fair-share"); err != nil {
		t.Skip("no crates/fair-share")
	}
	files, _ := filepath.Glob("../scripts/*.json")
	sort.Strings(files)
	for _, f := range files {
		f := f
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			abs, _ := filepath.Abs(f)
			cmd := exec.Command("cargo", "run", "-q", "--offline", "-p", "fair-share", "--example", "replay", "--", abs)
			cmd.Dir = "../.."
			out, err := cmd.Output()
			if err != nil {
				t.Skipf("cargo replay: %v", err)
			}
			var want struct{ Waits []int64 }
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			s, err := LoadScript(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Replay(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want.Waits) {
				t.Fatalf("%d waits, the crate %d", len(got), len(want.Waits))
			}
			for i := range got {
				if got[i] != want.Waits[i] {
					t.Fatalf("wait %d: %d ns, the crate %d", i, got[i], want.Waits[i])
				}
			}
		})
	}
}
