package pgwire

import "sluice/sql/types"

// The value codecs of sql/types, called through variables so that this
// package has a single place where it depends on them.
var (
	formatText   = types.FormatText
	parseText    = types.ParseText
	encodeBinary = types.EncodeBinary
	decodeBinary = types.DecodeBinary
)
