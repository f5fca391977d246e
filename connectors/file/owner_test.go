package file_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sluice/connectors/file"
	"sluice/exec/connector"
	"sluice/sql/pgerror"
)

func code(err error) string { return string(pgerror.GetCode(err)) }

// TestForeignFilesUntouched: a directory holding a part file the sink did
// not make, or owned by another sink, is refused and left as it was.
func TestForeignFilesUntouched(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "part-00000000000000000001.jsonl")
	if err := os.WriteFile(foreign, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (file.Factory{}).Open(context.Background(), config(dir)); code(err) != "58P02" {
		t.Fatalf("Open over a foreign part file: %v (%s), want 58P02", err, code(err))
	}
	if b, err := os.ReadFile(foreign); err != nil || string(b) != "mine\n" {
		t.Fatalf("foreign file after Open: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sluice-sink")); !os.IsNotExist(err) {
		t.Fatalf("the refused sink claimed the directory: %v", err)
	}

	owned := t.TempDir()
	s := open(t, config(owned))
	write(t, s, 1, appends(row(1, "x", true))...)
	other := config(owned)
	other.ID, other.Name = 8, "g"
	if _, err := (file.Factory{}).Open(context.Background(), other); code(err) != "58P02" {
		t.Fatalf("Open of another sink's directory: %v (%s), want 58P02", err, code(err))
	}
	open(t, config(owned)) // the owner itself opens it again
}

// TestPolicyConfinesPath: with a policy, paths resolve under its root
// and escapes are 42501.
func TestPolicyConfinesPath(t *testing.T) {
	root := t.TempDir()
	p, err := connector.NewPolicy(root, connector.DefaultSocketPorts, nil)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"../../etc/x", outside, "link/sub", "a/../../b", "/etc"} {
		cfg := config(path)
		cfg.Policy = p
		if _, err := (file.Factory{}).Validate(cfg); code(err) != "42501" {
			t.Errorf("path %q: %v (%s), want 42501", path, err, code(err))
		}
	}
	cfg := config("out/a/../b")
	cfg.Policy = p
	s := open(t, cfg)
	write(t, s, 1, appends(row(1, "x", true))...)
	if _, err := os.Stat(filepath.Join(p.FileRoot, "out", "b", "part-00000000000000000001.jsonl")); err != nil {
		t.Fatalf("relative path not under the root: %v", err)
	}
}
