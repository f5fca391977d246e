package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// A sink touches only files it made. Its directory holds an owner record,
// .sluice-sink, naming the sink (catalog id and name), written when the
// sink first opens the directory; the sink writes part-* and .tmp-*
// files only in a directory it owns. A directory another sink owns, or an
// unowned one already holding a file the sink would write, rename over or
// delete (part-*, .tmp-*), is refused (58P02) and left untouched. Other
// files of the directory are never touched.

const ownerFile = ".sluice-sink"

func (s *Sink) ownerRecord() string {
	return fmt.Sprintf("sluice file sink id=%d name=%s\n", s.cfg.ID, s.cfg.Name)
}

// checkOwner checks, writing nothing, that the sink owns its directory
// or may take it: it is missing, or holds none of the sink's kind of files
// and no other sink's record. A check-only plan (ID 0, at CREATE before
// the id is chosen) owns no directory yet.
func (s *Sink) checkOwner() error {
	_, err := s.owned()
	return err
}

// owned reports whether the directory holds this sink's owner record, or
// why the sink may not take it.
func (s *Sink) owned() (bool, error) {
	dir := s.c.dir
	want := s.ownerRecord()
	path := filepath.Join(dir, ownerFile)
	got, err := os.ReadFile(path)
	switch {
	case err == nil && string(got) == want && s.cfg.ID != 0:
		return true, nil
	case err == nil:
		return false, pgerror.New(pgcode.DuplicateFile, "file sink %s: directory %s belongs to another sink (%s)",
			s.cfg.Name, dir, strings.TrimSpace(string(got))).
			WithHint("Give each sink its own directory; a dropped sink's directory must be removed before another sink uses it.")
	case errors.Is(err, fs.ErrNotExist):
	default:
		return false, s.ioError(err, "reading %s", path)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, s.ioError(err, "reading directory %s", dir)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), partPrefix) || strings.HasPrefix(e.Name(), tmpPrefix) {
			return false, pgerror.New(pgcode.DuplicateFile, "file sink %s: %s already exists and was not made by this sink",
				s.cfg.Name, filepath.Join(dir, e.Name())).
				WithHint("A sink writes only files it made: give it an empty directory, or move the file away.")
		}
	}
	return false, nil
}

// claim checks that the sink owns its directory, taking an unowned
// directory that holds none of its kind of files.
func (s *Sink) claim() error {
	if ok, err := s.owned(); ok || err != nil {
		return err
	}
	path := filepath.Join(s.c.dir, ownerFile)
	want := s.ownerRecord()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return s.ioError(err, "creating %s", path)
	}
	_, err = f.WriteString(want)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(s.c.dir)
	}
	if err != nil {
		return s.ioError(err, "writing %s", path)
	}
	return nil
}
