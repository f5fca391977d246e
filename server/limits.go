package server

import (
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode"

	"sluice/exec/limit"
	"sluice/server/pgwire"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// This file holds the session settings that bound what a session may
// use: statement_timeout, idle_in_transaction_session_timeout and
// idle_session_timeout (enforced by pgwire through Timeouts), and
// statement_mem, the memory budget of one statement (enforced by
// exec/limit). Values take PostgreSQL's units and are shown as
// PostgreSQL shows them.

// limitSetting describes one of them.
type limitSetting struct {
	memory bool // base unit kB (else ms)
	min    int64
}

var limitSettings = map[string]limitSetting{
	"statement_timeout":                   {},
	"idle_in_transaction_session_timeout": {},
	"idle_session_timeout":                {},
	limit.Setting:                         {memory: true, min: 64},
}

func init() {
	for name, ls := range limitSettings {
		if !ls.memory {
			defaultSettings[name] = "0"
		}
	}
}

// defaultStatementMem is statement_mem's default, in kB: a quarter of the
// process's memory limit (cmd/sluice sets GOMEMLIMIT to half of RAM), or
// 1GB when no limit is set.
func defaultStatementMem() int64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return max(l/4>>20<<10, 64) // whole MB
	}
	return 1 << 20
}

// initLimits sets the limit settings a new session starts with: the
// defaults, then what the startup packet gives as parameters
// (statement_timeout=…) or in options (-c statement_timeout=…). An
// invalid value ends the connection attempt, as in PostgreSQL.
func (s *session) initLimits() error {
	s.settings[limit.Setting] = formatLimit(true, defaultStatementMem())
	for name, v := range startupSettings(s.info.Params) {
		if _, ok := limitSettings[name]; !ok {
			continue
		}
		canon, err := parseLimitSetting(name, v)
		if err != nil {
			return err
		}
		s.settings[name] = canon
	}
	return nil
}

// startupSettings returns the settings of a startup packet: parameters
// other than the protocol's own, and each -c name=value or --name=value
// of its options parameter.
func startupSettings(params map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range params {
		out[strings.ToLower(k)] = v
	}
	f := strings.Fields(params["options"])
	for i := 0; i < len(f); i++ {
		var kv string
		switch {
		case f[i] == "-c" && i+1 < len(f):
			i++
			kv = f[i]
		case strings.HasPrefix(f[i], "-c"):
			kv = f[i][2:]
		case strings.HasPrefix(f[i], "--"):
			kv = f[i][2:]
		default:
			continue
		}
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[strings.ToLower(strings.ReplaceAll(k, "-", "_"))] = v
		}
	}
	return out
}

// setLimit handles SET/RESET of a limit setting: it validates val and
// stores it in PostgreSQL's display form. ok is false for other settings.
func (s *session) setLimit(name, val string, reset bool) (ok bool, err error) {
	ls, ok := limitSettings[name]
	if !ok {
		return false, nil
	}
	if reset || val == "" || strings.EqualFold(strings.Trim(val, "'"), "default") {
		if ls.memory {
			s.settings[name] = formatLimit(true, defaultStatementMem())
		} else {
			s.settings[name] = "0"
		}
		return true, nil
	}
	canon, err := parseLimitSetting(name, val)
	if err != nil {
		return true, err
	}
	s.settings[name] = canon
	return true, nil
}

// parseLimitSetting parses a value of setting name with PostgreSQL's units
// (a bare number is in the base unit: ms or kB) and returns its display
// form.
func parseLimitSetting(name, val string) (string, error) {
	ls := limitSettings[name]
	n, err := parseUnits(strings.Trim(strings.TrimSpace(val), "'\""), ls.memory)
	if err != nil {
		hint := `Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".`
		if ls.memory {
			hint = `Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".`
		}
		return "", pgerror.New(pgcode.InvalidParameterValue, "invalid value for parameter \"%s\": \"%s\"", name, strings.Trim(val, "'")).WithHint("%s", hint)
	}
	if n < ls.min || n > math.MaxInt32 {
		return "", pgerror.New(pgcode.InvalidParameterValue, "%d%s is outside the valid range for parameter \"%s\" (%d%s .. %d%s)",
			n, unitOf(ls.memory), name, ls.min, unitOf(ls.memory), math.MaxInt32, unitOf(ls.memory))
	}
	return formatLimit(ls.memory, n), nil
}

// parseUnits parses "250", "5s", "1 min", "64MB" into the base unit (ms or
// kB), rounding as PostgreSQL does.
func parseUnits(v string, memory bool) (int64, error) {
	i := strings.IndexFunc(v, func(r rune) bool { return !(unicode.IsDigit(r) || r == '.' || r == '-' || r == '+') })
	num, unit := v, ""
	if i >= 0 {
		num, unit = v[:i], strings.TrimSpace(v[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, strconv.ErrSyntax
	}
	mult := 1.0
	if memory {
		switch unit {
		case "", "kB":
		case "B":
			mult = 1.0 / 1024
		case "MB":
			mult = 1 << 10
		case "GB":
			mult = 1 << 20
		case "TB":
			mult = 1 << 30
		default:
			return 0, strconv.ErrSyntax
		}
	} else {
		switch unit {
		case "", "ms":
		case "us":
			mult = 0.001
		case "s":
			mult = 1000
		case "min":
			mult = 60_000
		case "h":
			mult = 3_600_000
		case "d":
			mult = 86_400_000
		default:
			return 0, strconv.ErrSyntax
		}
	}
	r := math.Round(f * mult)
	if r > math.MaxInt64/2 || r < math.MinInt64/2 {
		return math.MaxInt64 / 2, nil
	}
	if f*mult > 0 && r == 0 {
		r = 1 // a positive value never rounds to "off"
	}
	return int64(r), nil
}

// formatLimit shows n (ms or kB) in the largest unit that divides it, as
// PostgreSQL's SHOW does.
func formatLimit(memory bool, n int64) string {
	if n == 0 {
		return "0"
	}
	type unit struct {
		name string
		size int64
	}
	units := []unit{{"d", 86_400_000}, {"h", 3_600_000}, {"min", 60_000}, {"s", 1000}, {"ms", 1}}
	if memory {
		units = []unit{{"TB", 1 << 30}, {"GB", 1 << 20}, {"MB", 1 << 10}, {"kB", 1}}
	}
	for _, u := range units {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// limitValue returns setting name in its base unit (ms or kB).
func (s *session) limitValue(name string) int64 {
	v, ok := s.settings[name]
	if !ok {
		return 0
	}
	n, err := parseUnits(v, limitSettings[name].memory)
	if err != nil {
		return 0
	}
	return n
}

// Timeouts implements pgwire.Timeouts.
func (s *session) Timeouts() (statement, idleInTx, idleSession time.Duration) {
	ms := func(name string) time.Duration { return time.Duration(s.limitValue(name)) * time.Millisecond }
	return ms("statement_timeout"), ms("idle_in_transaction_session_timeout"), ms("idle_session_timeout")
}

// errTooManyCursors is DECLARE past the cap on a session's cursors (the
// same as the protocol-level portals they are in PostgreSQL).
func errTooManyCursors() error {
	return pgerror.New(pgcode.ConfigurationLimitExceeded, "too many cursors: a session may hold at most %d", pgwire.MaxPortals).
		WithHint("CLOSE cursors you no longer need, or end the transaction.")
}

// statementMem returns the memory budget of the session's statements, in
// bytes.
func (s *session) statementMem() int64 { return s.limitValue(limit.Setting) << 10 }

func unitOf(memory bool) string {
	if memory {
		return " kB"
	}
	return ""
}
