package main

import (
	"errors"
	"log/slog"

	"github.com/seglog/seglog/store"
)

// openStoreReadOnly opens the store in dir without a lock and without
// writing. Until package store has a read-only open, the UI refuses a
// real directory rather than open it writable.
func openStoreReadOnly(dir string, logger *slog.Logger) (*store.Store, error) {
	_ = logger
	return nil, errors.New("ui: " + dir + ": this build has no read-only store open yet; only --playground works")
}
