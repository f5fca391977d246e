package pgwire

import (
	"time"

	"sluice/sql/types"
)

// The value codecs of sql/types, called through variables so that this
// package has a single place where it depends on them. Text forms of
// timestamptz follow the session's TimeZone (Zoned); binary forms are UTC
// microseconds whatever the zone.
var (
	appendText   = types.AppendTextIn
	parseText    = types.ParseTextIn
	encodeBinary = types.EncodeBinary
	decodeBinary = types.DecodeBinary
)

// Zoned is an optional capability of a Session: the time zone (its
// TimeZone setting, nil for UTC) in which timestamptz values are sent and
// read in text format. The connection asks it for every statement.
type Zoned interface {
	TimeZone() *time.Location
}

// zone returns the session's time zone (nil: UTC).
func (c *conn) zone() *time.Location {
	if c.zoned == nil {
		return nil
	}
	return c.zoned.TimeZone()
}
