package tests

// sluice_catalog (issue 18, item 2): the running jobs and their operators
// as relations, queried and joined over the wire, whose figures move as
// rows flow.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSluiceCatalog(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`,
		`CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n FROM t GROUP BY k`,
	)
	wantRows(t, conn, `SELECT name, kind, status FROM sluice_catalog.jobs ORDER BY id`,
		"t table running\nper_k materialized view running")
	// A join: the operators of each job, by kind.
	wantRows(t, conn, `SELECT j.name, o.operator, o.kind FROM sluice_catalog.jobs j JOIN sluice_catalog.operators o ON o.job_id = j.id
		WHERE j.name = 'per_k' ORDER BY o.operator`,
		"per_k 0-Subscribe Subscribe\nper_k 1-HashAgg HashAgg\nper_k 2-Project Project\nper_k 3-Materialize Materialize")
	// The edges join the operators at both ends.
	wantRows(t, conn, `SELECT f.kind, o.kind FROM sluice_catalog.edges e
		JOIN sluice_catalog.operators f ON f.job_id = e.job_id AND f.operator = e.from_operator
		JOIN sluice_catalog.operators o ON o.job_id = e.job_id AND o.operator = e.to_operator
		WHERE e.job = 'per_k' ORDER BY e.to_operator`,
		"Subscribe HashAgg\nHashAgg Project\nProject Materialize")
	var vals []string
	for i := 0; i < 500; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%5))
	}
	ExecAll(t, conn, `INSERT INTO t VALUES `+strings.Join(vals, ", "), `FLUSH`)
	waitFor(t, 10*time.Second, func() bool {
		got := queryLines(t, conn, `SELECT o.rows_in, o.rows_out, o.state_keys FROM sluice_catalog.operators o
			JOIN sluice_catalog.jobs j ON j.id = o.job_id WHERE j.name = 'per_k' AND o.kind = 'HashAgg'`)
		return len(got) == 1 && got[0] == "500 5 5"
	}, "the HashAgg's figures to reach 500 rows in, 5 out, 5 keys")
	wantRows(t, conn, `SELECT count(*) FROM pg_namespace WHERE nspname = 'sluice_catalog'`, "1")
	// The FLUSH above committed an epoch with the inserted rows' state.
	wantRows(t, conn, `SELECT count(*) > 0, bool_and(duration_ms >= commit_ms), bool_or(bytes > 0), bool_or(failed)
		FROM sluice_catalog.checkpoints WHERE started > now() - interval '1 hour'`, "t t t f")
}
