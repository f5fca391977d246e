package planner

import (
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// refuseClockInView refuses the functions that read the statement clock
// (now(), current_date, age(x) and their aliases) in a materialized view or
// sink. A view's rows are computed once, when their input changes, and never
// again as time passes: a filter such as ts > now() - INTERVAL '1 hour'
// would admit rows outside its bound (issue 17 item 8; the dataflow's
// evaluation context had no clock, so now() was 1970-01-01). Until a
// temporal filter re-evaluates such predicates as time advances, the view is
// refused rather than left to drift from its query. proctime() stays: it is
// the processing time of each row by definition.
func refuseClockInView(streaming bool, name string, nargs int) error {
	if !streaming || (name == "age" && nargs != 1) {
		return nil
	}
	return pgerror.New(pgcode.FeatureNotSupported,
		"%s() in a materialized view or sink is not supported", name).
		WithHint("a view is not re-evaluated as time passes; filter on the clock in the SELECT that reads the view, or use a WATERMARK, TUMBLE or HOP window, or proctime() for the time a row is processed")
}
