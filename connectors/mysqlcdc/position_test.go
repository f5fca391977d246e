package mysqlcdc

import (
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"sluice/connectors/internal/cdc"
)

// TestPositionRoundTrip: every phase's position, by file and offset or
// by GTID, decodes to itself, and truncated or foreign bytes are refused
// rather than misread.
func TestPositionRoundTrip(t *testing.T) {
	k1, k2 := "42", "a'b\x00c"
	for _, p := range []position{
		{phase: phaseFresh},
		{phase: phaseSnapshot, snapFile: "binlog.000001", snapPos: 325},
		{phase: phaseSnapshot, snapFile: "binlog.000001", snapPos: 325, lastKey: []*string{&k1, nil, &k2}},
		{phase: phaseStream, snapFile: "binlog.000001", snapPos: 325, file: "binlog.000007", pos: 1 << 31, skip: 3000},
		{phase: phaseSnapshot, snapFile: "binlog.000001", snapPos: 325, snapGTID: "0-1-17", byGTID: true, lastKey: []*string{&k1}},
		{phase: phaseStream, snapFile: "binlog.000001", snapPos: 325, snapGTID: "0-1-17", file: "binlog.000009", pos: 4,
			gtid: "0-1-4000,7-2-9", byGTID: true, skip: 12},
		{phase: phaseStream, byGTID: true}, // an upstream whose binlog held no GTID yet
	} {
		b := p.encode()
		got, err := decodePosition(b)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("%+v: decoded %+v, %v", p, got, err)
		}
		for n := range len(b) {
			if _, err := decodePosition(b[:n]); err == nil {
				t.Fatalf("%+v: a %d-byte prefix decoded", p, n)
			}
		}
	}
	for _, bad := range [][]byte{{9, 0}, {posVersion + 1, 0}, {0, 0}} {
		if _, err := decodePosition(bad); err == nil {
			t.Fatalf("%v decoded", bad)
		}
	}
	// A GTID position that does not parse is refused, not resumed from.
	bad := position{phase: phaseStream, byGTID: true, gtid: "0-1"}
	if _, err := decodePosition(bad.encode()); err == nil {
		t.Fatal("a malformed GTID position decoded")
	}
}

// TestPositionVersion1: a checkpoint written before GTIDs (version 1:
// no byGTID and no GTID fields) still decodes, to a file-and-offset
// position.
func TestPositionVersion1(t *testing.T) {
	k := "7"
	b := cdc.AppendHeader(1, phaseStream)
	b = cdc.AppendString(b, "binlog.000001")
	b = cdc.AppendUvarint(b, 325)
	b = cdc.AppendString(b, "binlog.000003")
	b = cdc.AppendUvarint(b, 1234)
	b = cdc.AppendUvarint(b, 5)
	b = cdc.AppendKey(b, []*string{&k})
	// The bytes version 1 wrote, spelled out.
	want := []byte{1, 2, 13, 'b', 'i', 'n', 'l', 'o', 'g', '.', '0', '0', '0', '0', '0', '1', 0xc5, 0x02,
		13, 'b', 'i', 'n', 'l', 'o', 'g', '.', '0', '0', '0', '0', '0', '3', 0xd2, 0x09, 5, 2, 2, '7'}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("version 1 bytes %v, want %v", b, want)
	}
	got, err := decodePosition(b)
	if err != nil {
		t.Fatal(err)
	}
	exp := position{phase: phaseStream, snapFile: "binlog.000001", snapPos: 325, file: "binlog.000003", pos: 1234, skip: 5, lastKey: []*string{&k}}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("decoded %+v, want %+v", got, exp)
	}
}

// TestGTIDPos: a MariaDB GTID position keeps the last GTID of each
// domain, prints its domains in order, agrees with go-mysql's
// MariadbGTIDSet (which the syncer is started with), and refuses
// malformed text.
func TestGTIDPos(t *testing.T) {
	g, err := parseGTIDPos("2-1-5, 0-1-100")
	if err != nil {
		t.Fatal(err)
	}
	g.add(mysql.MariadbGTID{DomainID: 0, ServerID: 3, SequenceNumber: 101})
	g.add(mysql.MariadbGTID{DomainID: 1, ServerID: 1, SequenceNumber: 1})
	if got := g.String(); got != "0-3-101,1-1-1,2-1-5" {
		t.Fatalf("String() = %q", got)
	}
	set, err := mysql.ParseMariadbGTIDSet(g.String())
	if err != nil || set.String() != g.String() {
		t.Fatalf("go-mysql reads %q as %v, %v", g.String(), set, err)
	}
	if e, err := parseGTIDPos(""); err != nil || len(e) != 0 || e.String() != "" {
		t.Fatalf("empty: %v, %v", e, err)
	}
	for _, bad := range []string{"0-1", "0-1-x", "0-1-1,,1-1-1", "0-1-1,0-2-2", "a-b-c"} {
		if _, err := parseGTIDPos(bad); err == nil {
			t.Errorf("parseGTIDPos(%q) succeeded", bad)
		}
	}
}
