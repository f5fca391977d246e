package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// addrFile is the file in the data directory that names the address the
// running server listens on: how `sluice backup --data-dir D` finds it.
const addrFile = "sluice.addr"

// writeAddr records the listening address in the data directory (written
// to a temporary name and renamed, so a reader never sees half of it).
func writeAddr(dataDir string, addr net.Addr) error {
	tmp := filepath.Join(dataDir, addrFile+".tmp")
	if err := os.WriteFile(tmp, []byte(addr.String()+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dataDir, addrFile))
}

// runBackup is `sluice backup --data-dir D --to DIR`: it connects to the
// server running on D (the address in D/sluice.addr) as a superuser and
// runs BACKUP TO DIR there: the server takes the backup, online, at a
// committed epoch. The password, when one is needed, comes from
// PGPASSWORD.
func runBackup(args []string) error {
	fl := flag.NewFlagSet("sluice backup", flag.ContinueOnError)
	dataDir := fl.String("data-dir", "./sluice-data", "data directory of the running server")
	to := fl.String("to", "", "directory to write the backup into (new or empty)")
	user := fl.String("user", "sluice", "superuser to connect as (password from PGPASSWORD)")
	timeout := fl.Duration("timeout", time.Hour, "give up after this long")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *to == "" || fl.NArg() > 0 {
		return errors.New("usage: sluice backup --data-dir D --to DIR")
	}
	dir, err := filepath.Abs(*to)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(*dataDir, addrFile))
	if errors.Is(err, fs.ErrNotExist) {
		return pgerror.New(pgcode.ConnectionException, "no server has run on %s (%s is missing)", *dataDir, addrFile).
			WithHint("Start sluice on that data directory first: a backup is taken by the running server.")
	}
	if err != nil {
		return err
	}
	addr := strings.TrimSpace(string(b))
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	u := url.URL{Scheme: "postgres", User: url.User(*user), Host: addr, Path: "/sluice"}
	conn, err := pgconn.Connect(ctx, u.String())
	if err != nil {
		return pgerror.Wrap(err, pgcode.ConnectionException, "connecting to the server of %s at %s", *dataDir, addr).
			WithHint("Is sluice running on that data directory?")
	}
	defer conn.Close(context.Background())
	start := time.Now()
	if _, err := conn.Exec(ctx, "BACKUP TO '"+strings.ReplaceAll(dir, "'", "''")+"'").ReadAll(); err != nil {
		return err
	}
	m, err := storage.ReadBackupManifest(dir)
	if err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("the server reported success but %s has no %s", dir, storage.ManifestName)
	}
	fmt.Printf("backup of epoch %d in %s: %d files, %.1f MiB, %v\n", m.Epoch, dir, len(m.Files), float64(m.Bytes)/(1<<20), time.Since(start).Round(time.Millisecond))
	fmt.Printf("start it with: sluice --data-dir %s (or a copy of it)\n", dir)
	return nil
}
