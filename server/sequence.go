package server

import (
	"context"
	"encoding/binary"
	"math"
	"sluice/sql/acl"
	"strings"
	"sync"

	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Sequences: CREATE SEQUENCE, SERIAL and identity columns, nextval,
// currval, setval, lastval.
//
// A sequence's definition is a catalog entry (Kind "sequence"); its value
// lives under SpaceMeta, apart from the epochs, and is written with a
// synced write before a value is handed out: a value is never handed out
// twice, across crashes. To keep nextval cheap the write reserves a block
// of seqBlock values; after a crash the unused rest of a block is skipped
// (PostgreSQL does the same with its 32 pre-logged values). Like
// PostgreSQL's, sequences are not transactional.

const kindSequence = "sequence"

// seqBlock is how many values one synced write reserves.
const seqBlock = 32

// sequenceSet holds the loaded sequences' states (Engine.seqs).
type sequenceSet struct {
	mu   sync.Mutex
	byID map[uint64]*seqState
}

// seqState is a loaded sequence. last is the last value handed out or
// set; if !called, the next nextval returns last itself. Values in
// [lo, hi] (hi the persisted bound) may be handed out without a write.
type seqState struct {
	mu       sync.Mutex
	name     string
	def      storage.SequenceEntry
	last     int64
	called   bool
	reserved bool  // a block is reserved: values up to bound are free to hand out
	bound    int64 // the persisted value
}

func seqKey(id uint64) []byte { return storage.Key(storage.SpaceMeta, id, []byte("seq")) }

// encodeSeqValue is the persisted state: the value and is_called.
func encodeSeqValue(v int64, called bool) []byte {
	b := binary.AppendVarint(nil, v)
	if called {
		return append(b, 1)
	}
	return append(b, 0)
}

func decodeSeqValue(b []byte) (int64, bool) {
	v, n := binary.Varint(b)
	return v, n > 0 && n < len(b) && b[n] == 1
}

// seqState returns the state of sequence entry ent, loading it.
func (e *Engine) seqState(ent *storage.CatalogEntry) (*seqState, error) {
	e.seqs.mu.Lock()
	defer e.seqs.mu.Unlock()
	if e.seqs.byID == nil {
		e.seqs.byID = map[uint64]*seqState{}
	}
	if st := e.seqs.byID[ent.ID]; st != nil {
		return st, nil
	}
	st := &seqState{name: ent.Name, def: *ent.Sequence, last: ent.Sequence.Start}
	v, err := e.db.Get(seqKey(ent.ID))
	if err != nil {
		return nil, err
	}
	if v != nil {
		st.last, st.called = decodeSeqValue(v)
	}
	e.seqs.byID[ent.ID] = st
	return st, nil
}

// next hands out the sequence's next value, reserving a block durably when
// the reserved one is used up.
func (e *Engine) seqNext(id uint64, st *seqState) (int64, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	d := st.def
	v := st.last
	if st.called {
		if (d.Increment > 0 && v > d.Max-d.Increment) || (d.Increment < 0 && v < d.Min-d.Increment) {
			if !d.Cycle {
				lim := d.Max
				what := "maximum"
				if d.Increment < 0 {
					lim, what = d.Min, "minimum"
				}
				return 0, pgerror.New(pgcode.SequenceGeneratorLimitExceeded, "nextval: reached %s value of sequence %q (%d)", what, st.name, lim)
			}
			if d.Increment > 0 {
				v = d.Min
			} else {
				v = d.Max
			}
			st.reserved = false
		} else {
			v += d.Increment
		}
	}
	if !st.reserved || (d.Increment > 0 && v > st.bound) || (d.Increment < 0 && v < st.bound) {
		bound := v
		for i := 1; i < seqBlock; i++ {
			n := bound + d.Increment
			if (d.Increment > 0 && (n > d.Max || n < bound)) || (d.Increment < 0 && (n < d.Min || n > bound)) {
				break
			}
			bound = n
		}
		wb := e.db.NewWriteBatch()
		wb.Set(seqKey(id), encodeSeqValue(bound, true))
		if err := e.db.WriteSync(wb); err != nil {
			return 0, err
		}
		st.bound, st.reserved = bound, true
	}
	st.last, st.called = v, true
	return v, nil
}

// seqSet is setval: persisted before it returns.
func (e *Engine) seqSet(id uint64, st *seqState, v int64, called bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if v < st.def.Min || v > st.def.Max {
		return pgerror.New(pgcode.NumericValueOutOfRange, "setval: value %d is out of bounds for sequence %q (%d..%d)", v, st.name, st.def.Min, st.def.Max)
	}
	wb := e.db.NewWriteBatch()
	wb.Set(seqKey(id), encodeSeqValue(v, called))
	if err := e.db.WriteSync(wb); err != nil {
		return err
	}
	st.last, st.called, st.reserved = v, called, false
	return nil
}

// seqSession is a session's sequence state: currval's values and lastval.
type seqSession struct {
	cur     map[uint64]int64
	last    int64
	hasLast bool
}

// sessionSeqs implements eval.Sequences for a session.
type sessionSeqs struct{ s *session }

// lookupSequence resolves a sequence name as regclass input does:
// unquoted parts fold to lower case, "public." is the default schema.
func (s *session) lookupSequence(text string) (*storage.CatalogEntry, error) {
	name := seqNameOf(text)
	ent := s.e.cat.get(name)
	if ent == nil {
		return nil, pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", name)
	}
	if ent.Kind != kindSequence {
		return nil, pgerror.New(pgcode.WrongObjectType, "%q is not a sequence", name)
	}
	return ent, nil
}

func seqNameOf(text string) string {
	var parts []string
	for _, p := range strings.Split(strings.TrimSpace(text), ".") {
		if len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"' {
			parts = append(parts, strings.ReplaceAll(p[1:len(p)-1], `""`, `"`))
		} else {
			parts = append(parts, strings.ToLower(p))
		}
	}
	if len(parts) == 2 && parts[0] == "public" {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}

func (q sessionSeqs) Nextval(name string) (int64, error) {
	ent, err := q.s.lookupSequence(name)
	if err != nil {
		return 0, err
	}
	if err := q.s.requireSequence(ent, acl.Usage|acl.Update); err != nil {
		return 0, err
	}
	st, err := q.s.e.seqState(ent)
	if err != nil {
		return 0, err
	}
	v, err := q.s.e.seqNext(ent.ID, st)
	if err != nil {
		return 0, err
	}
	q.s.noteSeq(ent.ID, v)
	return v, nil
}

func (s *session) noteSeq(id uint64, v int64) {
	if s.seq.cur == nil {
		s.seq.cur = map[uint64]int64{}
	}
	s.seq.cur[id] = v
	s.seq.last, s.seq.hasLast = v, true
}

func (q sessionSeqs) Currval(name string) (int64, error) {
	ent, err := q.s.lookupSequence(name)
	if err != nil {
		return 0, err
	}
	if err := q.s.requireSequence(ent, acl.Usage|acl.Select); err != nil {
		return 0, err
	}
	v, ok := q.s.seq.cur[ent.ID]
	if !ok {
		return 0, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "currval of sequence %q is not yet defined in this session", ent.Name)
	}
	return v, nil
}

func (q sessionSeqs) Setval(name string, v int64, called bool) (int64, error) {
	ent, err := q.s.lookupSequence(name)
	if err != nil {
		return 0, err
	}
	if err := q.s.requireSequence(ent, acl.Update); err != nil {
		return 0, err
	}
	st, err := q.s.e.seqState(ent)
	if err != nil {
		return 0, err
	}
	if err := q.s.e.seqSet(ent.ID, st, v, called); err != nil {
		return 0, err
	}
	if called {
		if q.s.seq.cur == nil {
			q.s.seq.cur = map[uint64]int64{}
		}
		q.s.seq.cur[ent.ID] = v
	}
	return v, nil
}

func (q sessionSeqs) Lastval() (int64, error) {
	if !q.s.seq.hasLast {
		return 0, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "lastval is not yet defined in this session")
	}
	return q.s.seq.last, nil
}

// sequenceEntry builds a sequence definition as PostgreSQL fills in the
// defaults for type t, increment inc and the given bounds and start.
func sequenceEntry(t types.T, inc int64, start, minv, maxv *int64, cycle bool) (*storage.SequenceEntry, error) {
	typMax := int64(math.MaxInt64)
	typMin := int64(math.MinInt64)
	switch t.Fam {
	case types.Int2:
		typMax, typMin = math.MaxInt16, math.MinInt16
	case types.Int4:
		typMax, typMin = math.MaxInt32, math.MinInt32
	}
	d := &storage.SequenceEntry{Fam: uint8(t.Fam), Increment: inc, Cycle: cycle}
	if inc > 0 {
		d.Min, d.Max = 1, typMax
	} else {
		d.Min, d.Max = typMin, -1
	}
	if minv != nil {
		d.Min = *minv
	}
	if maxv != nil {
		d.Max = *maxv
	}
	if d.Min < typMin || d.Max > typMax {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "MINVALUE or MAXVALUE is out of range for sequence data type %s", t)
	}
	if d.Min >= d.Max {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "MINVALUE (%d) must be less than MAXVALUE (%d)", d.Min, d.Max)
	}
	if inc > 0 {
		d.Start = d.Min
	} else {
		d.Start = d.Max
	}
	if start != nil {
		d.Start = *start
	}
	if d.Start < d.Min {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "START value (%d) cannot be less than MINVALUE (%d)", d.Start, d.Min)
	}
	if d.Start > d.Max {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "START value (%d) cannot be greater than MAXVALUE (%d)", d.Start, d.Max)
	}
	return d, nil
}

// createSequence runs CREATE SEQUENCE.
func (e *Engine) createSequence(ctx context.Context, x *parser.CreateSequence) error {
	def, err := sequenceEntry(x.Type, x.Increment, x.Start, x.MinValue, x.MaxValue, x.Cycle)
	if err != nil {
		return err
	}
	if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
		return err
	}
	return e.ddl(ctx, func() error {
		if exists, err := e.checkName(x.Name, x.IfNotExists); exists || err != nil {
			return err
		}
		e.persist(&storage.CatalogEntry{ID: e.cat.allocID(), Kind: kindSequence, Name: x.Name, SQL: x.Text(), Sequence: def})
		return nil
	})
}

// forgetSequence drops a sequence's loaded state and persisted value.
func (e *Engine) forgetSequence(id uint64) {
	e.seqs.mu.Lock()
	delete(e.seqs.byID, id)
	e.seqs.mu.Unlock()
	wb := e.db.NewWriteBatch()
	wb.Delete(seqKey(id))
	_ = e.db.WriteSync(wb)
}
