package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Reading outputs back: the floor's file and Sluice's file sink parts are
// JSON lines of the same columns; both are summarized into results and
// compared with the reference exactly.

// readResults summarizes the JSON lines of the files (in order) as the
// output of workload w1 or w2.
func readResults(workload string, files []string) (results, error) {
	r := results{windows: map[w2Key]w2Agg{}}
	for _, name := range files {
		if err := readFile(workload, name, &r); err != nil {
			return r, err
		}
	}
	if workload == "w2" {
		r.seal()
	}
	return r, nil
}

func readFile(workload, name string, r *results) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for ln := 1; s.Scan(); ln++ {
		line := bytes.TrimSpace(s.Bytes())
		if len(line) == 0 {
			continue
		}
		var row struct {
			Auction     int64  `json:"auction"`
			Bidder      int64  `json:"bidder"`
			Price       int64  `json:"price"`
			DateTime    string `json:"date_time"`
			WindowStart string `json:"window_start"`
			N           int64  `json:"n"`
			MaxPrice    int64  `json:"max_price"`
		}
		d := json.NewDecoder(bytes.NewReader(line))
		d.DisallowUnknownFields()
		if err := d.Decode(&row); err != nil {
			return fmt.Errorf("%s:%d: %v", name, ln, err)
		}
		switch workload {
		case "w1":
			micros, err := parseAnyTimestamp(row.DateTime)
			if err != nil {
				return fmt.Errorf("%s:%d: date_time: %v", name, ln, err)
			}
			r.rows++
			r.checksum += w1Sum(row.Auction, row.Bidder, row.Price, micros)
		case "w2":
			start, err := parseAnyTimestamp(row.WindowStart)
			if err != nil {
				return fmt.Errorf("%s:%d: window_start: %v", name, ln, err)
			}
			k := w2Key{row.Auction, start}
			if _, dup := r.windows[k]; dup {
				return fmt.Errorf("%s:%d: window (%d, %s) twice", name, ln, k.auction, row.WindowStart)
			}
			r.windows[k] = w2Agg{row.N, row.MaxPrice}
		}
	}
	return s.Err()
}

// tsLayouts are the timestamp texts the outputs may hold: RFC 3339 (the
// floor) and PostgreSQL's text form (Sluice's JSON encoder).
var tsLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07", "2006-01-02T15:04:05.999999999"}

func parseAnyTimestamp(s string) (int64, error) {
	for _, l := range tsLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("%q is not a timestamp", s)
}

// diff describes how got differs from want ("" when equal).
func diff(want, got results) string {
	if want.rows == got.rows && want.checksum == got.checksum {
		if len(want.windows) == 0 {
			return ""
		}
		same := len(want.windows) == len(got.windows)
		for k, a := range want.windows {
			if same && got.windows[k] != a {
				same = false
			}
		}
		if same {
			return ""
		}
	}
	msg := fmt.Sprintf("rows %d (want %d), checksum %016x (want %016x)", got.rows, want.rows, got.checksum, want.checksum)
	missing, wrong, extra := 0, 0, 0
	for k, a := range want.windows {
		if g, ok := got.windows[k]; !ok {
			missing++
		} else if g != a {
			wrong++
		}
	}
	for k := range got.windows {
		if _, ok := want.windows[k]; !ok {
			extra++
		}
	}
	if len(want.windows) > 0 {
		msg += fmt.Sprintf("; windows missing %d, wrong %d, extra %d", missing, wrong, extra)
	}
	return msg
}

// partFiles lists the committed part files of a file sink's directory, in
// epoch order.
func partFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "part-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}
