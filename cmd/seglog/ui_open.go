package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// openStoreReadOnly opens the store in dir read-only: no lock, nothing
// written, so the UI can run beside the store's writer.
func openStoreReadOnly(dir string, logger *slog.Logger) (*store.Store, error) {
	st, err := vfs.Default.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such store directory", dir)
		}
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	return store.Open(dir, store.Options{ReadOnly: true, Logger: logger})
}
