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

// claim checks that the sink owns its directory, taking an unowned
// directory that holds none of its kind of files.
func (s *Sink) claim() error {
	dir := s.c.dir
	want := s.ownerRecord()
	path := filepath.Join(dir, ownerFile)
	got, err := os.ReadFile(path)
	switch {
	case err == nil && string(got) == want:
		return nil
	case err == nil:
		return pgerror.New(pgcode.DuplicateFile, "file sink %s: directory %s belongs to another sink (%s)",
			s.cfg.Name, dir, strings.TrimSpace(string(got))).
			WithHint("Give each sink its own directory; a dropped sink's directory must be removed before another sink uses it.")
	case !errors.Is(err, fs.ErrNotExist):
		return s.ioError(err, "reading %s", path)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s.ioError(err, "reading directory %s", dir)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), partPrefix) || strings.HasPrefix(e.Name(), tmpPrefix) {
			return pgerror.New(pgcode.DuplicateFile, "file sink %s: %s already exists and was not made by this sink",
				s.cfg.Name, filepath.Join(dir, e.Name())).
				WithHint("A sink writes only files it made: give it an empty directory, or move the file away.")
		}
	}
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
		err = syncDir(dir)
	}
	if err != nil {
		return s.ioError(err, "writing %s", path)
	}
	return nil
}
