package sink

import (
	"context"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// After a restore. A data directory started from a backup holds an older
// committed epoch than the one the original server had reached, and a
// transactional sink's external system may have confirmed epochs newer
// than the backup's. The restored server would number its new epochs the
// same way with different contents, so it can neither deliver them (the
// external system would hold two different epochs N) nor skip them (rows
// would be lost): the sink pauses, visibly (SHOW SINKS, the log), until a
// person resets it (README, "Backups"). A marker file keeps it paused
// across restarts (storage.DB.PauseSink).
//
// The check, made each time the sink connects: in normal operation the
// external system's last epoch is at most the committed epoch (it is the
// delivered epoch, or a later one after a crash between the external
// commit and Sluice's record of it). One beyond the committed epoch means
// the external system saw epochs this directory did not produce. (A
// restored directory that has already committed the epoch the external
// system confirmed cannot be told from a crash by epoch numbers: README,
// "Backups".)

type pausedError struct{ err error }

func (p *pausedError) Error() string { return p.err.Error() }
func (p *pausedError) Unwrap() error { return p.err }

// checkProgress compares the external system's last epoch with this data
// directory's.
func (d *Deliverer) checkProgress(last uint64) error {
	committed := d.DB.CommittedEpoch()
	d.mu.Lock()
	delivered := d.mu.delivered
	d.mu.Unlock()
	if last <= committed {
		// Delivered, or written and not yet recorded here (a crash
		// between the external commit and Sluice's record of it; the
		// sink log may already be trimmed past it): skipped once.
		return nil
	}
	return &pausedError{pgerror.New(pgcode.ObjectNotInPrerequisiteState,
		"sink %s is paused: its external system has confirmed epoch %d, but this data directory delivered epoch %d and holds up to epoch %d (was it restored from a backup?); delivering would write epochs a second time and skipping them would lose rows",
		d.Name, last, delivered, committed).
		WithHint("Reset the sink: empty its target and its progress, then DROP SINK %s and CREATE it again (README, \"Backups\").", d.Name)}
}

// pause records why delivery stopped, logs it, and waits for ctx: a paused
// sink delivers nothing until it is reset.
func (d *Deliverer) pause(ctx context.Context, err error, record bool) error {
	d.mu.Lock()
	d.mu.paused = err
	d.mu.Unlock()
	if record {
		if werr := d.DB.PauseSink(d.ID, err.Error()); werr != nil && d.Logf != nil {
			d.Logf("sink %s: recording the pause: %v", d.Name, werr)
		}
	}
	if d.Logf != nil {
		hint := ""
		if h := pgerror.Flatten(err).Hint; h != "" {
			hint = "; hint: " + h
		}
		d.Logf("sink %s: %v (SQLSTATE 55000)%s", d.Name, err, hint)
	}
	<-ctx.Done()
	return nil
}
