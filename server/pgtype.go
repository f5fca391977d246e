package server

import "sluice/sql/types"

// This file holds pg_type's rows and the I/O functions they name, as
// PostgreSQL 15 has them (generated from its catalog): every type Sluice
// has and its array type, so that drivers reading pg_type (psycopg's
// TypeInfo, pgjdbc's TypeInfoCache) find PostgreSQL's numbers.

// pgTypeRow is one row of pg_type. The reg* fields hold the oids of the
// functions (pgTypeFuncs) that PostgreSQL names there, 0 for none.
type pgTypeRow struct {
	oid       int64
	name      string
	len       int
	byval     bool
	category  string
	preferred bool
	subscript int64
	elem      int64
	array     int64
	input     int64
	output    int64
	receive   int64
	send      int64
	modin     int64
	modout    int64
	analyze   int64
	align     string
	storage   string
	collation int64
}

// pgTypeRows are pg_type's rows in oid order.
var pgTypeRows = []pgTypeRow{
	{16, "bool", 1, true, "B", true, 0, 0, 1000, 1242, 1243, 2436, 2437, 0, 0, 0, "c", "p", 0},
	{17, "bytea", -1, false, "U", false, 0, 0, 1001, 1244, 31, 2412, 2413, 0, 0, 0, "i", "x", 0},
	{18, "char", 1, true, "Z", false, 0, 0, 1002, 1245, 33, 2434, 2435, 0, 0, 0, "c", "p", 0},
	{19, "name", 64, false, "S", false, 6180, 18, 1003, 34, 35, 2422, 2423, 0, 0, 0, "c", "p", 950},
	{20, "int8", 8, true, "N", false, 0, 0, 1016, 460, 461, 2408, 2409, 0, 0, 0, "d", "p", 0},
	{21, "int2", 2, true, "N", false, 0, 0, 1005, 38, 39, 2404, 2405, 0, 0, 0, "s", "p", 0},
	{23, "int4", 4, true, "N", false, 0, 0, 1007, 42, 43, 2406, 2407, 0, 0, 0, "i", "p", 0},
	{24, "regproc", 4, true, "N", false, 0, 0, 1008, 44, 45, 2444, 2445, 0, 0, 0, "i", "p", 0},
	{25, "text", -1, false, "S", true, 0, 0, 1009, 46, 47, 2414, 2415, 0, 0, 0, "i", "x", 100},
	{26, "oid", 4, true, "N", true, 0, 0, 1028, 1798, 1799, 2418, 2419, 0, 0, 0, "i", "p", 0},
	{700, "float4", 4, true, "N", false, 0, 0, 1021, 200, 201, 2424, 2425, 0, 0, 0, "i", "p", 0},
	{701, "float8", 8, true, "N", true, 0, 0, 1022, 214, 215, 2426, 2427, 0, 0, 0, "d", "p", 0},
	{1000, "_bool", -1, false, "A", false, 6179, 16, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1001, "_bytea", -1, false, "A", false, 6179, 17, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1002, "_char", -1, false, "A", false, 6179, 18, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1003, "_name", -1, false, "A", false, 6179, 19, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 950},
	{1005, "_int2", -1, false, "A", false, 6179, 21, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1007, "_int4", -1, false, "A", false, 6179, 23, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1008, "_regproc", -1, false, "A", false, 6179, 24, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1009, "_text", -1, false, "A", false, 6179, 25, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 100},
	{1015, "_varchar", -1, false, "A", false, 6179, 1043, 0, 750, 751, 2400, 2401, 2915, 2916, 3816, "i", "x", 100},
	{1016, "_int8", -1, false, "A", false, 6179, 20, 0, 750, 751, 2400, 2401, 0, 0, 3816, "d", "x", 0},
	{1021, "_float4", -1, false, "A", false, 6179, 700, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1022, "_float8", -1, false, "A", false, 6179, 701, 0, 750, 751, 2400, 2401, 0, 0, 3816, "d", "x", 0},
	{1028, "_oid", -1, false, "A", false, 6179, 26, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1043, "varchar", -1, false, "S", false, 0, 0, 1015, 1046, 1047, 2432, 2433, 2915, 2916, 0, "i", "x", 100},
	{1082, "date", 4, true, "D", false, 0, 0, 1182, 1084, 1085, 2468, 2469, 0, 0, 0, "i", "p", 0},
	{1083, "time", 8, true, "D", false, 0, 0, 1183, 1143, 1144, 2470, 2471, 2909, 2910, 0, "d", "p", 0},
	{1114, "timestamp", 8, true, "D", false, 0, 0, 1115, 1312, 1313, 2474, 2475, 2905, 2906, 0, "d", "p", 0},
	{1115, "_timestamp", -1, false, "A", false, 6179, 1114, 0, 750, 751, 2400, 2401, 2905, 2906, 3816, "d", "x", 0},
	{1182, "_date", -1, false, "A", false, 6179, 1082, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{1183, "_time", -1, false, "A", false, 6179, 1083, 0, 750, 751, 2400, 2401, 2909, 2910, 3816, "d", "x", 0},
	{1184, "timestamptz", 8, true, "D", true, 0, 0, 1185, 1150, 1151, 2476, 2477, 2907, 2908, 0, "d", "p", 0},
	{1185, "_timestamptz", -1, false, "A", false, 6179, 1184, 0, 750, 751, 2400, 2401, 2907, 2908, 3816, "d", "x", 0},
	{1186, "interval", 16, false, "T", true, 0, 0, 1187, 1160, 1161, 2478, 2479, 2903, 2904, 0, "d", "p", 0},
	{1187, "_interval", -1, false, "A", false, 6179, 1186, 0, 750, 751, 2400, 2401, 2903, 2904, 3816, "d", "x", 0},
	{1231, "_numeric", -1, false, "A", false, 6179, 1700, 0, 750, 751, 2400, 2401, 2917, 2918, 3816, "i", "x", 0},
	{1700, "numeric", -1, false, "N", false, 0, 0, 1231, 1701, 1702, 2460, 2461, 2917, 2918, 0, "i", "m", 0},
	{2205, "regclass", 4, true, "N", false, 0, 0, 2210, 2218, 2219, 2452, 2453, 0, 0, 0, "i", "p", 0},
	{2206, "regtype", 4, true, "N", false, 0, 0, 2211, 2220, 2221, 2454, 2455, 0, 0, 0, "i", "p", 0},
	{2210, "_regclass", -1, false, "A", false, 6179, 2205, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{2211, "_regtype", -1, false, "A", false, 6179, 2206, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{2950, "uuid", 16, false, "U", false, 0, 0, 2951, 2952, 2953, 2961, 2962, 0, 0, 0, "c", "p", 0},
	{2951, "_uuid", -1, false, "A", false, 6179, 2950, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{3802, "jsonb", -1, false, "U", false, 6098, 0, 3807, 3806, 3804, 3805, 3803, 0, 0, 0, "i", "x", 0},
	{3807, "_jsonb", -1, false, "A", false, 6179, 3802, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
	{4089, "regnamespace", 4, true, "N", false, 0, 0, 4090, 4084, 4085, 4087, 4088, 0, 0, 0, "i", "p", 0},
	{4090, "_regnamespace", -1, false, "A", false, 6179, 4089, 0, 750, 751, 2400, 2401, 0, 0, 3816, "i", "x", 0},
}

// pgTypeFunc is a function pg_type names (an input, output, receive,
// send, typmod, analyze or subscript function): pg_proc lists them with
// PostgreSQL's oids so that regproc prints and reads them (pgjdbc compares
// typinput with 'pg_catalog.array_in'::regproc). Sluice calls none of
// them by name; they are internal, strict, parallel safe.
type pgTypeFunc struct {
	oid      int64
	name     string
	ret      int64
	args     []uint32
	volatile string
}

// pgTypeFuncs are those functions in oid order.
var pgTypeFuncs = []pgTypeFunc{
	{31, "byteaout", 2275, []uint32{17}, "i"},
	{33, "charout", 2275, []uint32{18}, "i"},
	{34, "namein", 19, []uint32{2275}, "i"},
	{35, "nameout", 2275, []uint32{19}, "i"},
	{38, "int2in", 21, []uint32{2275}, "i"},
	{39, "int2out", 2275, []uint32{21}, "i"},
	{42, "int4in", 23, []uint32{2275}, "i"},
	{43, "int4out", 2275, []uint32{23}, "i"},
	{44, "regprocin", 24, []uint32{2275}, "s"},
	{45, "regprocout", 2275, []uint32{24}, "s"},
	{46, "textin", 25, []uint32{2275}, "i"},
	{47, "textout", 2275, []uint32{25}, "i"},
	{200, "float4in", 700, []uint32{2275}, "i"},
	{201, "float4out", 2275, []uint32{700}, "i"},
	{214, "float8in", 701, []uint32{2275}, "i"},
	{215, "float8out", 2275, []uint32{701}, "i"},
	{460, "int8in", 20, []uint32{2275}, "i"},
	{461, "int8out", 2275, []uint32{20}, "i"},
	{750, "array_in", 2277, []uint32{2275, 26, 23}, "s"},
	{751, "array_out", 2275, []uint32{2277}, "s"},
	{1046, "varcharin", 1043, []uint32{2275, 26, 23}, "i"},
	{1047, "varcharout", 2275, []uint32{1043}, "i"},
	{1084, "date_in", 1082, []uint32{2275}, "s"},
	{1085, "date_out", 2275, []uint32{1082}, "s"},
	{1143, "time_in", 1083, []uint32{2275, 26, 23}, "s"},
	{1144, "time_out", 2275, []uint32{1083}, "i"},
	{1150, "timestamptz_in", 1184, []uint32{2275, 26, 23}, "s"},
	{1151, "timestamptz_out", 2275, []uint32{1184}, "s"},
	{1160, "interval_in", 1186, []uint32{2275, 26, 23}, "s"},
	{1161, "interval_out", 2275, []uint32{1186}, "s"},
	{1242, "boolin", 16, []uint32{2275}, "i"},
	{1243, "boolout", 2275, []uint32{16}, "i"},
	{1244, "byteain", 17, []uint32{2275}, "i"},
	{1245, "charin", 18, []uint32{2275}, "i"},
	{1312, "timestamp_in", 1114, []uint32{2275, 26, 23}, "s"},
	{1313, "timestamp_out", 2275, []uint32{1114}, "s"},
	{1701, "numeric_in", 1700, []uint32{2275, 26, 23}, "i"},
	{1702, "numeric_out", 2275, []uint32{1700}, "i"},
	{1798, "oidin", 26, []uint32{2275}, "i"},
	{1799, "oidout", 2275, []uint32{26}, "i"},
	{2218, "regclassin", 2205, []uint32{2275}, "s"},
	{2219, "regclassout", 2275, []uint32{2205}, "s"},
	{2220, "regtypein", 2206, []uint32{2275}, "s"},
	{2221, "regtypeout", 2275, []uint32{2206}, "s"},
	{2400, "array_recv", 2277, []uint32{2281, 26, 23}, "s"},
	{2401, "array_send", 17, []uint32{2277}, "s"},
	{2404, "int2recv", 21, []uint32{2281}, "i"},
	{2405, "int2send", 17, []uint32{21}, "i"},
	{2406, "int4recv", 23, []uint32{2281}, "i"},
	{2407, "int4send", 17, []uint32{23}, "i"},
	{2408, "int8recv", 20, []uint32{2281}, "i"},
	{2409, "int8send", 17, []uint32{20}, "i"},
	{2412, "bytearecv", 17, []uint32{2281}, "i"},
	{2413, "byteasend", 17, []uint32{17}, "i"},
	{2414, "textrecv", 25, []uint32{2281}, "s"},
	{2415, "textsend", 17, []uint32{25}, "s"},
	{2418, "oidrecv", 26, []uint32{2281}, "i"},
	{2419, "oidsend", 17, []uint32{26}, "i"},
	{2422, "namerecv", 19, []uint32{2281}, "s"},
	{2423, "namesend", 17, []uint32{19}, "s"},
	{2424, "float4recv", 700, []uint32{2281}, "i"},
	{2425, "float4send", 17, []uint32{700}, "i"},
	{2426, "float8recv", 701, []uint32{2281}, "i"},
	{2427, "float8send", 17, []uint32{701}, "i"},
	{2432, "varcharrecv", 1043, []uint32{2281, 26, 23}, "s"},
	{2433, "varcharsend", 17, []uint32{1043}, "s"},
	{2434, "charrecv", 18, []uint32{2281}, "i"},
	{2435, "charsend", 17, []uint32{18}, "i"},
	{2436, "boolrecv", 16, []uint32{2281}, "i"},
	{2437, "boolsend", 17, []uint32{16}, "i"},
	{2444, "regprocrecv", 24, []uint32{2281}, "i"},
	{2445, "regprocsend", 17, []uint32{24}, "i"},
	{2452, "regclassrecv", 2205, []uint32{2281}, "i"},
	{2453, "regclasssend", 17, []uint32{2205}, "i"},
	{2454, "regtyperecv", 2206, []uint32{2281}, "i"},
	{2455, "regtypesend", 17, []uint32{2206}, "i"},
	{2460, "numeric_recv", 1700, []uint32{2281, 26, 23}, "i"},
	{2461, "numeric_send", 17, []uint32{1700}, "i"},
	{2468, "date_recv", 1082, []uint32{2281}, "i"},
	{2469, "date_send", 17, []uint32{1082}, "i"},
	{2470, "time_recv", 1083, []uint32{2281, 26, 23}, "i"},
	{2471, "time_send", 17, []uint32{1083}, "i"},
	{2474, "timestamp_recv", 1114, []uint32{2281, 26, 23}, "i"},
	{2475, "timestamp_send", 17, []uint32{1114}, "i"},
	{2476, "timestamptz_recv", 1184, []uint32{2281, 26, 23}, "i"},
	{2477, "timestamptz_send", 17, []uint32{1184}, "i"},
	{2478, "interval_recv", 1186, []uint32{2281, 26, 23}, "i"},
	{2479, "interval_send", 17, []uint32{1186}, "i"},
	{2903, "intervaltypmodin", 23, []uint32{1263}, "i"},
	{2904, "intervaltypmodout", 2275, []uint32{23}, "i"},
	{2905, "timestamptypmodin", 23, []uint32{1263}, "i"},
	{2906, "timestamptypmodout", 2275, []uint32{23}, "i"},
	{2907, "timestamptztypmodin", 23, []uint32{1263}, "i"},
	{2908, "timestamptztypmodout", 2275, []uint32{23}, "i"},
	{2909, "timetypmodin", 23, []uint32{1263}, "i"},
	{2910, "timetypmodout", 2275, []uint32{23}, "i"},
	{2915, "varchartypmodin", 23, []uint32{1263}, "i"},
	{2916, "varchartypmodout", 2275, []uint32{23}, "i"},
	{2917, "numerictypmodin", 23, []uint32{1263}, "i"},
	{2918, "numerictypmodout", 2275, []uint32{23}, "i"},
	{2952, "uuid_in", 2950, []uint32{2275}, "i"},
	{2953, "uuid_out", 2275, []uint32{2950}, "i"},
	{2961, "uuid_recv", 2950, []uint32{2281}, "i"},
	{2962, "uuid_send", 17, []uint32{2950}, "i"},
	{3803, "jsonb_send", 17, []uint32{3802}, "i"},
	{3804, "jsonb_out", 2275, []uint32{3802}, "i"},
	{3805, "jsonb_recv", 3802, []uint32{2281}, "i"},
	{3806, "jsonb_in", 3802, []uint32{2275}, "i"},
	{3816, "array_typanalyze", 16, []uint32{2281}, "s"},
	{4084, "regnamespacein", 4089, []uint32{2275}, "s"},
	{4085, "regnamespaceout", 2275, []uint32{4089}, "s"},
	{4087, "regnamespacerecv", 4089, []uint32{2281}, "i"},
	{4088, "regnamespacesend", 17, []uint32{4089}, "i"},
	{6098, "jsonb_subscript_handler", 2281, []uint32{2281}, "i"},
	{6179, "array_subscript_handler", 2281, []uint32{2281}, "i"},
	{6180, "raw_array_subscript_handler", 2281, []uint32{2281}, "i"},
}

// pgTypeRelRows returns pg_type's rows.
func pgTypeRelRows(*sysEnv) []types.Row {
	out := make([]types.Row, 0, len(pgTypeRows))
	for _, r := range pgTypeRows {
		typtype := "b"
		out = append(out, mkRow(r.oid, r.name, oidPgCatalog, oidOwner, r.len, r.byval,
			typtype, r.category, r.preferred, true, ",", 0,
			r.subscript, r.elem, r.array, r.input, r.output, r.receive,
			r.send, r.modin, r.modout, r.analyze, r.align, r.storage,
			false, 0, -1, 0, r.collation, nil,
			nil, nil))
	}
	return out
}
