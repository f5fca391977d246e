package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// The session's TimeZone: the zone timestamptz values are printed in and
// text without an offset is read in, and the calendar of casts to
// timestamp/date, date_trunc, extract and to_char (exec/eval Context.Loc,
// pgwire's Zoned). A materialized view keeps the zone it was created in.

// parseTimeZoneSetting reads a value of SET TIME ZONE / SET TimeZone / the
// timezone startup parameter as PostgreSQL's check_timezone does: a number
// is hours east of Greenwich (ISO sign: -7 is UTC-7, shown "<-07>+07"),
// anything else a zone name or POSIX offset (types.ParseZone). It returns
// the zone and the name SHOW TimeZone prints.
func parseTimeZoneSetting(val string) (*time.Location, string, error) {
	v := strings.TrimSpace(val)
	if h, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "eEnNiI") {
		if h < -168 || h > 168 {
			return nil, "", errTimeZoneValue(val)
		}
		loc, name := types.FixedZoneISO(int64(h * 3600))
		return loc, name, nil
	}
	loc, name, ok := types.ParseZone(v)
	if !ok {
		return nil, "", errTimeZoneValue(val)
	}
	return loc, name, nil
}

func errTimeZoneValue(val string) error {
	return pgerror.New(pgcode.InvalidParameterValue, "invalid value for parameter \"TimeZone\": \"%s\"", val).
		WithHint("Use a zone name such as 'Europe/Berlin' or 'UTC', a POSIX offset such as '+05:30' (west of Greenwich), or hours east as a number.")
}

// setTimeZone makes val the session's TimeZone ("" or DEFAULT/LOCAL: UTC,
// the server's zone) and returns the name SHOW prints.
func (s *session) setTimeZone(val string, def bool) (string, error) {
	if def || val == "" || strings.EqualFold(val, "default") || strings.EqualFold(val, "local") {
		s.loc = nil
		return "UTC", nil
	}
	loc, name, err := parseTimeZoneSetting(val)
	if err != nil {
		return "", err
	}
	if loc == time.UTC {
		loc = nil
	}
	s.loc = loc
	return name, nil
}

// TimeZone implements pgwire.Zoned: the session's zone (nil: UTC).
func (s *session) TimeZone() *time.Location { return s.loc }

// startupTimeZone applies a timezone parameter of the StartupMessage
// (pgx and psycopg send the client's zone); a zone Sluice does not know
// refuses the connection, as PostgreSQL does.
func (s *session) startupTimeZone(params map[string]string) error {
	for k, v := range params {
		if !strings.EqualFold(k, "timezone") {
			continue
		}
		name, err := s.setTimeZone(v, false)
		if err != nil {
			return err
		}
		s.settings["timezone"] = name
		if s.changed == nil {
			s.changed = map[string]string{}
		}
		s.changed["TimeZone"] = name
	}
	return nil
}

type zoneKey struct{}

// withZone attaches the session's TimeZone name to ctx: DDL plans the
// views and sinks it creates in it (spec.Plan.TimeZone).
func withZone(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, zoneKey{}, name)
}

// zoneOf is the TimeZone name ctx carries ("" for the server's own work:
// UTC).
func zoneOf(ctx context.Context) string {
	z, _ := ctx.Value(zoneKey{}).(string)
	return z
}
