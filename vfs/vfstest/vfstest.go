// Package vfstest holds the file helpers tests across seglog share: reading
// and replacing whole files through a vfs.FS, failing the test on any
// error, so that tests touch files the way the code under test does.
package vfstest

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// ReadFile returns the whole of name on fsys.
func ReadFile(tb testing.TB, fsys vfs.FS, name string) []byte {
	tb.Helper()
	b, err := vfs.ReadFileLimit(fsys, name, math.MaxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// WriteFile creates or replaces name on fsys with data, making its
// directory if needed. Nothing is synced.
func WriteFile(tb testing.TB, fsys vfs.FS, name string, data []byte) {
	tb.Helper()
	if err := fsys.MkdirAll(filepath.Dir(name)); err != nil {
		tb.Fatal(err)
	}
	f, err := fsys.Create(name)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// Snapshot describes every entry below dir (and dir itself) on fsys:
// mode, size, modification time and a hash of the contents, so that a
// changed byte, a created or removed entry, or a rewrite with the same
// bytes shows when two snapshots are compared.
func Snapshot(tb testing.TB, fsys vfs.FS, dir string) map[string]string {
	tb.Helper()
	snap := map[string]string{}
	var walk func(rel string)
	walk = func(rel string) {
		name := filepath.Join(dir, rel)
		fi, err := fsys.Stat(name)
		if err != nil {
			tb.Fatal(err)
		}
		desc := fmt.Sprintf("%v %d %v", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if !fi.IsDir() {
			snap[rel] = fmt.Sprintf("%s %x", desc, sha256.Sum256(ReadFile(tb, fsys, name)))
			return
		}
		snap[rel+"/"] = desc
		names, err := fsys.List(name)
		if err != nil {
			tb.Fatal(err)
		}
		for _, n := range names {
			walk(filepath.Join(rel, n))
		}
	}
	walk("")
	return snap
}

// Unchanged fails the test for every entry that differs between two
// snapshots (Snapshot's, or any map of entry names to descriptions),
// created and removed entries included, in name order; what names the
// action that was to leave the tree as it was.
func Unchanged(tb testing.TB, what string, before, after map[string]string) {
	tb.Helper()
	keys := slices.Collect(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, inBefore := before[k]
		a, inAfter := after[k]
		switch {
		case !inAfter:
			tb.Errorf("%s removed %q (was %q)", what, k, b)
		case !inBefore:
			tb.Errorf("%s created %q (%q)", what, k, a)
		case a != b:
			tb.Errorf("%s changed %q: %q -> %q", what, k, b, a)
		}
	}
}
