package pgwire

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgproto3/v2"

	"sluice/sql/types"
)

// seriesRows is stream_series(n) of the fake engine: the rows 1..n,
// produced seriesChunk at a time as they are pulled, counted in the
// handler so that tests see how far a result was read.
type seriesRows struct {
	h       *fakeHandler
	n, next int
	closed  bool
}

const seriesChunk = 10

func (h *fakeHandler) newSeries(n int) *seriesRows { return &seriesRows{h: h, n: n, next: 1} }

func (r *seriesRows) Next(ctx context.Context) ([]types.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []types.Row
	for ; r.next <= r.n && len(out) < seriesChunk; r.next++ {
		out = append(out, types.Row{types.NewInt(int64(r.next))})
		r.h.produced.Add(1)
	}
	return out, nil
}

func (r *seriesRows) Close() {
	if r.closed {
		panic("rows closed twice")
	}
	r.closed = true
	r.h.rowsClosed.Add(1)
}

// TestRawStreamedPortal checks that a streamed result is pulled only as far
// as the client asks: an Execute with a row limit reads one chunk beyond
// what it sends at most, the rest stays unread in the suspended portal,
// and closing the portal (or the end of the implicit transaction) closes
// the rows. A portal that sent exactly its limit stays suspended and the
// next Execute completes it with 0 rows, as in PostgreSQL.
func TestRawStreamedPortal(t *testing.T) {
	ts := startServer(t, Options{}, false)
	h := ts.h
	c, _ := startRaw(t, ts)

	c.send(&pgproto3.Query{String: "BEGIN"})
	c.expect("CommandComplete BEGIN", "ReadyForQuery T")
	c.send(&pgproto3.Parse{Query: "SELECT stream_series(1000000)"},
		&pgproto3.Bind{DestinationPortal: "big"},
		&pgproto3.Execute{Portal: "big", MaxRows: 3},
		&pgproto3.Sync{})
	c.expect("ParseComplete", "BindComplete", `DataRow "1"`, `DataRow "2"`, `DataRow "3"`, "PortalSuspended", "ReadyForQuery T")
	if got := h.produced.Load(); got > 3+seriesChunk {
		t.Fatalf("an Execute of 3 rows produced %d", got)
	}
	c.send(&pgproto3.Execute{Portal: "big", MaxRows: 12}, &pgproto3.Sync{})
	want := []string{}
	for i := 4; i <= 15; i++ {
		want = append(want, `DataRow "`+strconv.Itoa(i)+`"`)
	}
	c.expect(append(want, "PortalSuspended", "ReadyForQuery T")...)
	if got := h.produced.Load(); got > 15+seriesChunk {
		t.Fatalf("15 rows sent, %d produced", got)
	}
	c.send(&pgproto3.Close{ObjectType: 'P', Name: "big"}, &pgproto3.Sync{})
	c.expect("CloseComplete", "ReadyForQuery T")
	if got := h.rowsClosed.Load(); got != 1 {
		t.Fatalf("closing the portal closed %d results", got)
	}

	// Exactly at the limit: suspended, then completed with 0 rows.
	c.send(&pgproto3.Parse{Query: "SELECT stream_series(4)"},
		&pgproto3.Bind{DestinationPortal: "four"},
		&pgproto3.Execute{Portal: "four", MaxRows: 2},
		&pgproto3.Execute{Portal: "four", MaxRows: 2},
		&pgproto3.Execute{Portal: "four", MaxRows: 2},
		&pgproto3.Sync{})
	c.expect("ParseComplete", "BindComplete", `DataRow "1"`, `DataRow "2"`, "PortalSuspended",
		`DataRow "3"`, `DataRow "4"`, "PortalSuspended", "CommandComplete SELECT 0", "ReadyForQuery T")
	if got := h.rowsClosed.Load(); got != 2 {
		t.Fatalf("a finished portal left its result open (%d closed)", got)
	}
	c.send(&pgproto3.Query{String: "COMMIT"})
	c.expect("CommandComplete COMMIT", "ReadyForQuery I")

	// Outside a transaction block the portal goes at Sync.
	c.send(&pgproto3.Parse{Query: "SELECT stream_series(100)"},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 1},
		&pgproto3.Sync{})
	c.expect("ParseComplete", "BindComplete", `DataRow "1"`, "PortalSuspended", "ReadyForQuery I")
	if got := h.rowsClosed.Load(); got != 3 {
		t.Fatalf("the end of the implicit transaction left a result open (%d closed)", got)
	}

	// Without a limit, and in the simple protocol, everything is sent.
	c.send(&pgproto3.Parse{Query: "SELECT stream_series(25)"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	got := c.recvUntilReady()
	if len(got) != 2+25+2 || got[len(got)-2] != "CommandComplete SELECT 25" {
		t.Fatalf("unlimited Execute: %q", got)
	}
	c.send(&pgproto3.Query{String: "SELECT stream_series(25)"})
	got = c.recvUntilReady()
	if len(got) != 1+25+2 || got[0] != "RowDescription stream_series:23:4:-1:0" || got[len(got)-2] != "CommandComplete SELECT 25" {
		t.Fatalf("simple query: %q", got)
	}
	if got := h.rowsClosed.Load(); got != 5 {
		t.Fatalf("%d results closed, want 5", got)
	}
}
