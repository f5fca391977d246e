package mysqlcdc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"sluice/connectors/internal/cdc"
)

type phase = cdc.Phase

const (
	phaseFresh    = cdc.Fresh    // nothing read yet: take the snapshot
	phaseSnapshot = cdc.Snapshot // reading the snapshot taken at (snapFile, snapPos)
	phaseStream   = cdc.Stream   // streaming from (file, pos)
)

// position is what a checkpoint keeps of a source.
type position struct {
	phase phase
	// snapFile and snapPos are the binlog position the snapshot stands
	// at: where the stream starts after it; snapGTID is the same point as
	// MariaDB's GTID position (when byGTID).
	snapFile string
	snapPos  uint64
	snapGTID string
	// lastKey is the text of the key columns of the last snapshot row
	// emitted (nil: none yet).
	lastKey []*string
	// file and pos are the binlog position after the last transaction
	// emitted whole, gtid the same point as a GTID position (when byGTID);
	// skip is the number of rows of the next transaction already emitted.
	file string
	pos  uint64
	gtid string
	skip uint64
	// byGTID says a session starts from the GTID position (which stays
	// valid when the binlog files rotate or are purged after the source
	// read them), not from the file and offset.
	byGTID bool
}

// Version 1 has no GTIDs; version 2 adds byGTID, snapGTID and gtid.
const posVersion = 2

// encode is the cdc framing with the snapshot's file and offset, the
// stream's file, offset and skip, then (version 2) byGTID and the two
// GTID positions as text.
func (p position) encode() []byte {
	b := cdc.AppendHeader(posVersion, p.phase)
	b = cdc.AppendString(b, p.snapFile)
	b = cdc.AppendUvarint(b, p.snapPos)
	b = cdc.AppendString(b, p.file)
	b = cdc.AppendUvarint(b, p.pos)
	b = cdc.AppendUvarint(b, p.skip)
	by := uint64(0)
	if p.byGTID {
		by = 1
	}
	b = cdc.AppendUvarint(b, by)
	b = cdc.AppendString(b, p.snapGTID)
	b = cdc.AppendString(b, p.gtid)
	return cdc.AppendKey(b, p.lastKey)
}

func decodePosition(b []byte) (position, error) {
	d, version, ph, ok := cdc.NewDecoder(b, posVersion)
	if !ok {
		return position{}, cdc.BadPosition(Name)
	}
	p := position{phase: ph, snapFile: d.String(), snapPos: d.Uvarint(), file: d.String(), pos: d.Uvarint(), skip: d.Uvarint()}
	if version >= 2 {
		by := d.Uvarint()
		p.byGTID, p.snapGTID, p.gtid = by == 1, d.String(), d.String()
		if by > 1 {
			return position{}, cdc.BadPosition(Name)
		}
	}
	p.lastKey = d.Key()
	if !d.End() {
		return position{}, cdc.BadPosition(Name)
	}
	if p.byGTID {
		if _, err := parseGTIDPos(p.snapGTID); err != nil {
			return position{}, cdc.BadPosition(Name)
		}
		if _, err := parseGTIDPos(p.gtid); err != nil {
			return position{}, cdc.BadPosition(Name)
		}
	}
	return p, nil
}

// gtidPos is a MariaDB GTID position (gtid_current_pos, the argument of
// @slave_connect_state): the last GTID of each replication domain.
type gtidPos map[uint32]mysql.MariadbGTID

// parseGTIDPos reads "domain-server-seq,…" ("" is the empty position).
func parseGTIDPos(s string) (gtidPos, error) {
	g := gtidPos{}
	if strings.TrimSpace(s) == "" {
		return g, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("empty GTID in %q", s)
		}
		id, err := mysql.ParseMariadbGTID(part)
		if err != nil {
			return nil, err
		}
		if _, dup := g[id.DomainID]; dup {
			return nil, fmt.Errorf("domain %d twice in %q", id.DomainID, s)
		}
		g[id.DomainID] = *id
	}
	return g, nil
}

// add records that the transaction id committed: it is its domain's last.
func (g gtidPos) add(id mysql.MariadbGTID) { g[id.DomainID] = id }

// String is the position's text, its domains in order.
func (g gtidPos) String() string {
	domains := make([]uint32, 0, len(g))
	for d := range g {
		domains = append(domains, d)
	}
	sort.Slice(domains, func(i, j int) bool { return domains[i] < domains[j] })
	parts := make([]string, len(domains))
	for i, d := range domains {
		id := g[d]
		parts[i] = id.String()
	}
	return strings.Join(parts, ",")
}
