package fairshare

import (
	"encoding/json"
	"fmt"
	"os"
)

// Script is an event script of ports/scripts/.
type Script struct {
	Threads int                `json:"threads"`
	Params  map[string]float64 `json:"params"`
	Random  Draws              `json:"random"`
	Events  []Event            `json:"events"`
}

// Draws are a script's random draws: one number every draw returns, or a list the draws go
// round in order.
type Draws []float64

// UnmarshalJSON takes a number or a list of numbers.
func (d *Draws) UnmarshalJSON(b []byte) error {
	var u float64
	if err := json.Unmarshal(b, &u); err == nil {
		*d = Draws{u}
		return nil
	}
	var units []float64
	if err := json.Unmarshal(b, &units); err != nil {
		return fmt.Errorf("random is neither a number nor a list of numbers: %s", b)
	}
	*d = units
	return nil
}

// Event is one wait or answer of a script (times in ns).
type Event struct {
	At      int64       `json:"at"`
	Thread  int         `json:"thread"`
	Do      string      `json:"do"`
	Status  int         `json:"status"`
	Latency int64       `json:"latency"`
	Unix    int64       `json:"unix"`
	Headers [][2]string `json:"headers"`
}

// LoadScript reads an event script.
func LoadScript(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Script
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &s, nil
}

// Replay feeds a script to a new law and gives the wait of every wait event, in ns.
func Replay(s *Script) ([]int64, error) {
	p := DefaultParams()
	for k, v := range s.Params {
		if err := p.SetParam(k, v); err != nil {
			return nil, err
		}
	}
	units := s.Random
	if len(units) == 0 {
		return nil, fmt.Errorf("random is missing or an empty list")
	}
	drawn := 0
	law, err := New(s.Threads, p, func() float64 {
		u := units[drawn%len(units)]
		drawn++
		return u
	})
	if err != nil {
		return nil, err
	}
	var waits []int64
	for _, e := range s.Events {
		switch e.Do {
		case "wait":
			waits = append(waits, law.WaitNs(e.Thread, e.At))
		case "answer":
			a := ReadAnswer(e.Status, e.Headers, e.Unix*1e9)
			law.ObserveNs(e.Thread, e.At, a, e.Latency)
		default:
			return nil, fmt.Errorf("unknown event %q", e.Do)
		}
	}
	return waits, nil
}
