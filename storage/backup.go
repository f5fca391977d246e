package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Backups. A backup is a Pebble checkpoint (hard links to the immutable
// sstables where the file system allows, copies of the WAL, MANIFEST and
// OPTIONS) taken while no epoch commits (db.commitMu), so it holds exactly
// the epochs up to one committed epoch plus the DML acknowledged before it
// (whose table logs the restored server replays). BACKUP_MANIFEST, written
// last, names that epoch, the build and every file with its size and
// SHA-256: a directory without it is an unfinished backup. A backup
// directory is a data directory: `sluice --data-dir DIR` starts from it.

// ManifestName is the file that marks a finished backup.
const ManifestName = "BACKUP_MANIFEST"

// BackupFile is one file of a backup.
type BackupFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// BackupManifest describes a finished backup.
type BackupManifest struct {
	// Epoch is the committed epoch the backup holds.
	Epoch uint64 `json:"epoch"`
	// Build is the build that took it (module version and VCS revision).
	Build string `json:"build"`
	// PebbleFormat is the store's Pebble format major version.
	PebbleFormat uint64 `json:"pebble_format"`
	// Source is the data directory it was taken from.
	Source string       `json:"source"`
	Taken  time.Time    `json:"taken"`
	Files  []BackupFile `json:"files"`
	// Bytes is the sum of the files' sizes.
	Bytes int64 `json:"bytes"`
}

// BuildString names the running build: module version and VCS revision
// when the binary carries them.
func BuildString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	s := bi.Main.Version
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			s += " " + kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				s += "+dirty"
			}
		}
	}
	return s
}

// extraFiles are the files of a data directory outside Pebble that a
// restored server needs: the key that seals secrets (secret.go in server).
var extraFiles = []string{"secret.key"}

// Backup writes a consistent copy of the store into dir, which must be
// absolute and either absent or empty, and returns its manifest.
func (db *DB) Backup(dir string) (*BackupManifest, error) {
	if !filepath.IsAbs(dir) {
		return nil, pgerror.New(pgcode.InvalidName, "relative path not allowed for BACKUP: %q", dir).
			WithHint("Give the full path, as the server sees it, for example '/var/backups/sluice-2026-12-05'.")
	}
	dir = filepath.Clean(dir)
	if rel, err := filepath.Rel(db.dir, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return nil, pgerror.New(pgcode.InvalidParameterValue, "backup directory %s is inside the data directory %s", dir, db.dir)
	}
	switch ents, err := os.ReadDir(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, pgerror.Wrap(err, pgcode.IOError, "backup directory %s", dir)
	case len(ents) > 0:
		return nil, pgerror.New(pgcode.DuplicateFile, "backup directory %s exists and is not empty", dir).
			WithHint("Back up into a new or empty directory.")
	default:
		// Pebble creates the directory itself.
		if err := os.Remove(dir); err != nil {
			return nil, pgerror.Wrap(err, pgcode.IOError, "backup directory %s", dir)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "backup directory %s", dir)
	}
	m, err := db.backup(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return m, nil
}

func (db *DB) backup(dir string) (*BackupManifest, error) {
	if err := db.space.check(0); err != nil {
		return nil, err
	}
	// The quiesce: no epoch commits while Pebble links the files, so the
	// checkpoint's m/epoch and everything it covers agree.
	db.commitMu.Lock()
	epoch := db.CommittedEpoch()
	err := db.pdb.Checkpoint(dir, pebble.WithFlushedWAL())
	db.commitMu.Unlock()
	if err != nil {
		return nil, db.space.writeError(err, "backup into %s", dir)
	}
	for _, name := range extraFiles {
		err := copyFile(filepath.Join(db.dir, name), filepath.Join(dir, name))
		if err == nil {
			err = os.Chmod(filepath.Join(dir, name), 0o600)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, pgerror.Wrap(err, pgcode.IOError, "backup %s", name)
		}
	}
	m := &BackupManifest{Epoch: epoch, Build: BuildString(), PebbleFormat: uint64(db.pdb.FormatMajorVersion()),
		Source: db.dir, Taken: time.Now().UTC()}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := describeFile(dir, p)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, f)
		m.Bytes += f.Size
		return nil
	})
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "backup into %s", dir)
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeSynced(filepath.Join(dir, ManifestName), append(b, '\n')); err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "backup into %s", dir)
	}
	return m, nil
}

func describeFile(root, p string) (BackupFile, error) {
	f, err := os.Open(p)
	if err != nil {
		return BackupFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return BackupFile{}, err
	}
	rel, _ := filepath.Rel(root, p)
	return BackupFile{Name: filepath.ToSlash(rel), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ReadBackupManifest reads the manifest of the backup in dir (or of the
// data directory a backup was restored into); nil, nil without one.
func ReadBackupManifest(dir string) (*BackupManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m BackupManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, pgerror.Wrap(err, pgcode.DataCorrupted, "%s in %s", ManifestName, dir)
	}
	return &m, nil
}

// VerifyBackup checks every file a backup's manifest names against its
// size and checksum.
func VerifyBackup(dir string) (*BackupManifest, error) {
	m, err := ReadBackupManifest(dir)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, pgerror.New(pgcode.DataCorrupted, "%s has no %s: not a finished backup", dir, ManifestName)
	}
	for _, want := range m.Files {
		got, err := describeFile(dir, filepath.Join(dir, filepath.FromSlash(want.Name)))
		if err != nil {
			return m, pgerror.Wrap(err, pgcode.DataCorrupted, "backup %s: %s", dir, want.Name)
		}
		if got != want {
			return m, pgerror.New(pgcode.DataCorrupted, "backup %s: %s has size %d sha256 %s, the manifest says %d %s",
				dir, want.Name, got.Size, got.SHA256, want.Size, want.SHA256)
		}
	}
	return m, nil
}

// Sinks paused after a restore. An EXACTLY_ONCE sink whose external system
// has confirmed an epoch newer than the one this data directory holds was
// fed by a newer copy of it: delivering this directory's epochs again
// would write an epoch twice, and skipping them would lose rows. Such a
// sink pauses, and a marker file keeps it paused across restarts (its
// epochs may by then have passed the external one, which would hide the
// mismatch).

func (db *DB) pauseFile(sink uint64) string {
	return filepath.Join(db.dir, fmt.Sprintf("sink-%d.paused", sink))
}

// PauseSink records that sink id is paused, with why.
func (db *DB) PauseSink(id uint64, why string) error {
	return os.WriteFile(db.pauseFile(id), []byte(why+"\n"), 0o644)
}

// SinkPaused returns why sink id is paused ("" if it is not).
func (db *DB) SinkPaused(id uint64) string {
	b, err := os.ReadFile(db.pauseFile(id))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ForgetSink removes what the store keeps outside Pebble about sink id
// (its pause marker).
func (db *DB) ForgetSink(id uint64) { _ = os.Remove(db.pauseFile(id)) }
