// Tests of the blackhole sink: its plan (discard, exactly once, append by
// default), that Write accepts and counts changes, and that it is
// registered under its name.
package blackhole_test

import (
	"context"
	"testing"

	"sluice/connectors/blackhole"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func TestBlackhole(t *testing.T) {
	f, err := connector.LookupSink("blackhole")
	if err != nil {
		t.Fatal(err)
	}
	cfg := connector.SinkConfig{Name: "b", Columns: []types.Column{{Name: "x", Type: types.TInt8}}}
	plan, err := f.Validate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := (connector.SinkPlan{Discard: true, Guarantee: connector.ExactlyOnce, WriteMode: "append"}); plan != want {
		t.Errorf("plan %+v, want %+v", plan, want)
	}
	cfg.WriteMode = "bogus"
	if _, err := f.Validate(cfg); pgerror.GetCode(err) != pgcode.InvalidParameterValue {
		t.Errorf("write_mode bogus: %v", err)
	}
	cfg.WriteMode = ""
	s, err := f.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	row := types.Row{types.NewInt(1)}
	for epoch := uint64(1); epoch <= 3; epoch++ {
		if err := s.Write(context.Background(), epoch, []connector.Change{{After: row}, {Before: row}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.(*blackhole.Sink).Changes(); n != 6 {
		t.Errorf("counted %d changes, want 6", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
