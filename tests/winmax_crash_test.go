package tests

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestWindowMaxJoinCrash: Nexmark q7 is planned as a window max join
// (one read of the bids, the maxima and the bids at them kept per open
// window). A real server runs it over 1,000,000 generated events with 100 ms
// checkpoints and is SIGKILLed at three random moments while the stream
// runs, and restarted; the view then holds exactly what the same query
// planned as a hash join over two reads (made so by a condition the
// rewrite does not take) holds, and what q7 means: the bids at their
// window's maximum, each window's bids at one price.
func TestWindowMaxJoinCrash(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.ConnectSimple(t)
	const events = 1000000
	q7 := `SELECT B.auction, B.price, B.bidder, B.date_time
FROM bid B
JOIN (
    SELECT MAX(price) AS maxprice, window_end AS date_time
    FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)
    GROUP BY window_end
) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time`
	// 1,000,000 events paced at 3 µs each: the stream runs for three
	// seconds, through the kills.
	src := strings.Replace(nexmarkSourceDDL("bid"), fmt.Sprintf("'%d'", nexmarkEvents), fmt.Sprintf("'%d'", events), 1)
	src = strings.Replace(src, "min.event.gap.in.ns = '0'", "min.event.gap.in.ns = '3000'", 1)
	views := map[string]string{"q7": q7, "q7_ref": q7 + " AND B1.maxprice IS NOT NULL"}
	ExecAll(t, conn, src)
	for name, q := range map[string]string{"q7": "WindowMaxJoin", "q7_ref": "HashJoin"} {
		res, err := QueryText(context.Background(), conn, "EXPLAIN CREATE MATERIALIZED VIEW "+name+" AS "+views[name])
		if err != nil {
			t.Fatal(err)
		}
		if p := fmt.Sprint(res.Rows); !strings.Contains(p, q) {
			t.Fatalf("%s is not planned with a %s: %s", name, q, p)
		}
	}
	ExecAll(t, conn, "CREATE MATERIALIZED VIEW q7 AS "+views["q7"], "CREATE MATERIALIZED VIEW q7_ref AS "+views["q7_ref"])
	for i := 0; i < 3; i++ {
		time.Sleep(time.Duration(100+rng.Intn(600)) * time.Millisecond) // a random moment
		var n int64
		_ = conn.QueryRow(context.Background(), "SELECT count(*) FROM q7").Scan(&n)
		t.Logf("kill %d: q7 has %d rows", i+1, n)
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		conn = srv.ConnectSimple(t)
	}
	read := func(q string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := QueryText(ctx, conn, "FLUSH"); err != nil {
			t.Fatal(err)
		}
		res, err := QueryText(ctx, conn, q)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(res.Rows)
	}
	const rows = "SELECT auction, price, bidder, date_time FROM %s ORDER BY date_time, auction, bidder, price"
	deadline := time.Now().Add(2 * time.Minute)
	var got, want string
	for stable := 0; stable < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("the views did not settle on the same rows: q7 %.300s…, the hash join %.300s…", got, want)
		}
		g, w := read(fmt.Sprintf(rows, "q7")), read(fmt.Sprintf(rows, "q7_ref"))
		if g == w && g == got {
			stable++
		} else {
			stable = 0
		}
		got, want = g, w
		time.Sleep(300 * time.Millisecond) // polling, bounded by the deadline
	}
	// What q7 means, checked on the view itself: about as many windows
	// as 1,000,000 events at 10 per second span, one price in each.
	var n, windows, prices int
	if _, err := fmt.Sscanf(read(`SELECT count(*), count(DISTINCT w), count(DISTINCT (w, price)) FROM
  (SELECT price, ceil(extract(epoch FROM date_time) / 10) AS w FROM q7) x`), "[[%d %d %d]]", &n, &windows, &prices); err != nil {
		t.Fatal(err)
	}
	t.Logf("q7: %d rows, %d windows, %d (window, price) pairs", n, windows, prices)
	if windows < events/10/10*8/10 || n < windows || prices > windows+windows/10 {
		t.Fatalf("q7 has %d rows in %d windows at %d prices: want about %d windows, one price each", n, windows, prices, events/10/10)
	}
}
