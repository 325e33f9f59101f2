package fairshare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// expectedWaits reads a script's `waits`: the wait the crate gave at each of its wait
// events, in order, in integer nanoseconds (ports/README.md, "How the ports are held to the
// law"), every thread's last one included.
func expectedWaits(path string) ([]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var w struct {
		Waits *[]int64 `json:"waits"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	if w.Waits == nil {
		return nil, fmt.Errorf("%s: no waits", path)
	}
	return *w.Waits, nil
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
			exp, err := expectedWaits(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(exp) {
				t.Fatalf("%d waits, want %d", len(got), len(exp))
			}
			wi := 0
			for ei, e := range s.Events {
				if e.Do != "wait" {
					continue
				}
				w := exp[wi]
				if got[wi] != w {
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
