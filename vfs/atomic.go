package vfs

import "path/filepath"

// WriteFileAtomic replaces name with data durably: the bytes go to
// name.tmp, which is fsynced and renamed over name, and then the directory
// is fsynced. A crash at any point leaves either the old file or the new
// one (and perhaps a stale name.tmp, which readers ignore).
func WriteFileAtomic(fs FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(name))
}
