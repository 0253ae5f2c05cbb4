package main

import (
	"log/slog"

	"github.com/seglog/seglog/store"
)

// openStoreReadOnly opens the store in dir read-only: no lock, nothing
// written, so the UI can run beside the store's writer.
func openStoreReadOnly(dir string, logger *slog.Logger) (*store.Store, error) {
	if err := storeDirExists(dir); err != nil {
		return nil, err
	}
	return store.Open(dir, store.Options{ReadOnly: true, Logger: logger})
}
