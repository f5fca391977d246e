package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Format versions of what a data directory holds. A build reads the
// formats from ReadFormats up to these and writes these; each release
// reads the directories of the one before (README, "Upgrades and
// formats"). Bump one whenever its encoding changes, and teach the build
// to read the previous one.
const (
	// CatalogFormat is the encoding of catalog entries (c/<id>).
	CatalogFormat = 1
	// PlanFormat is the encoding of a job's stored physical plan
	// (exec/spec's Encode, CatalogEntry.Plan).
	PlanFormat = 1
	// StateFormat is the layout of operator state: keyed state under
	// s/<op:8><vnode:2><key> (vnode.go) and each operator's encoding.
	StateFormat = 1
)

// ReadFormat is the oldest format of each kind this build reads.
var ReadFormat = Formats{Catalog: 1, Plan: 1, State: 1}

// Formats are the format versions of a data directory, recorded under
// m/format.
type Formats struct {
	Catalog int `json:"catalog"`
	Plan    int `json:"plan"`
	State   int `json:"state"`
}

// Current is the formats this build writes.
var Current = Formats{Catalog: CatalogFormat, Plan: PlanFormat, State: StateFormat}

func (f Formats) String() string {
	return fmt.Sprintf("catalog %d, plan %d, state %d", f.Catalog, f.Plan, f.State)
}

// buildStamp is set at link time: -ldflags "-X sluice/storage.buildStamp=…".
var buildStamp string

// Build names this build: the link-time stamp, else the VCS revision Go
// recorded (with "+dirty" for a modified tree), else the module version.
func Build() string {
	if buildStamp != "" {
		return buildStamp
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return rev + dirty
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "devel"
}

// FormatError refuses a data directory whose formats this build cannot
// read; cmd/sluice exits with status 3 on it.
type FormatError struct {
	Dir        string
	Found      Formats // zero: written before formats were versioned
	FoundBuild string
}

func (e *FormatError) Error() string {
	if e.Found == (Formats{}) {
		return fmt.Sprintf("data directory %s was written by a build before versioned formats (format 0); this build (%s) reads formats %s and later only",
			e.Dir, Build(), ReadFormat)
	}
	by := ""
	if e.FoundBuild != "" {
		by = " by build " + e.FoundBuild
	}
	return fmt.Sprintf("data directory %s was written%s in formats %s; this build (%s) reads formats %s to %s",
		e.Dir, by, e.Found, Build(), ReadFormat, Current)
}

// IsFormatError reports whether err refuses a data directory's formats.
func IsFormatError(err error) bool {
	var fe *FormatError
	return errors.As(err, &fe)
}

// readable reports whether this build reads formats f.
func readable(f Formats) bool {
	in := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	return in(f.Catalog, ReadFormat.Catalog, Current.Catalog) && in(f.Plan, ReadFormat.Plan, Current.Plan) &&
		in(f.State, ReadFormat.State, Current.State)
}

// checkFormat refuses a directory this build cannot read, and records
// the formats and this build in it (a new directory gets them first).
// recovering (--recover) accepts a directory whose format record the
// recovery lost, logging it.
func (db *DB) checkFormat(recovering bool, logf func(string, ...any)) error {
	v, err := db.getRaw([]byte("m/format"))
	if err != nil {
		return err
	}
	if v == nil {
		empty := true
		if err := db.Scan(nil, func(_, _ []byte) error { empty = false; return errStop }); err != nil && err != errStop {
			return err
		}
		if !empty && !recovering {
			return db.formatError(Formats{})
		}
		if !empty {
			logf("storage: RECOVER: the data directory's format record is lost; taking it as this build's formats (%s)", Current)
		}
	} else {
		var f Formats
		if err := json.Unmarshal(v, &f); err != nil {
			return pgerror.Wrap(err, pgcode.DataCorrupted, "corrupt format record of data directory %s", db.dir)
		}
		if !readable(f) {
			return db.formatError(f)
		}
		b, _ := db.getRaw([]byte("m/build"))
		logf("storage: data directory %s: formats %s, last written by build %s; this build is %s", db.dir, f, b, Build())
	}
	// This build writes its own formats from now on: a directory it
	// touched is read back only by builds that read them.
	cur, _ := json.Marshal(Current)
	wb := db.NewWriteBatch()
	wb.Set([]byte("m/format"), cur)
	wb.Set([]byte("m/build"), []byte(Build()))
	return db.WriteSync(wb)
}

func (db *DB) formatError(f Formats) error {
	b, _ := db.getRaw([]byte("m/build"))
	fe := &FormatError{Dir: db.dir, Found: f, FoundBuild: string(b)}
	return pgerror.Wrap(fe, pgcode.ObjectNotInPrerequisiteState, "refusing to start").
		WithHint("Nothing was changed. Start the build that wrote this directory, or a build that reads its formats (sluice --version prints them); see README, \"Upgrades and formats\".")
}

// RecordedFormat returns the formats and build recorded in the directory.
func (db *DB) RecordedFormat() (Formats, string, error) {
	var f Formats
	v, err := db.getRaw([]byte("m/format"))
	if err != nil || v == nil {
		return f, "", err
	}
	if err := json.Unmarshal(v, &f); err != nil {
		return f, "", err
	}
	b, err := db.getRaw([]byte("m/build"))
	return f, string(b), err
}

var errStop = errors.New("stop")
