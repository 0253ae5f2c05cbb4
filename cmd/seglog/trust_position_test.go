package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestTrustDamageAtFscksPosition: damage below the recovery point of a
// seglog log (after an unclean shutdown, so every command must look) is
// refused by consume, consume --raw and produce, each naming the file and
// the byte position that seglog fsck --json reports for it, and none of
// them changes a byte. The cases are a flipped CRC-protected byte and a
// bad magic in the middle of a v2 log, and a legacy (v1) entry with a bad
// CRC-32 (the case 2 for legacy data).
func TestTrustDamageAtFscksPosition(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"v2 crc", func(t *testing.T, dir string) { damageMidBatch(t, dir, record.HeaderSize+3) }},
		{"v2 magic", func(t *testing.T, dir string) { damageMidBatch(t, dir, 16) }},
		{"legacy crc", writeLegacyDamage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			tc.damage(t, dir)
			before := dirSnapshot(t, dir)
			out, code := fsckJSONRun(t, dir)
			vfstest.Unchanged(t, "fsck", before, dirSnapshot(t, dir))
			file, pos := "", int64(-1)
			for _, p := range out.Problems {
				if strings.HasSuffix(p.File, segment.LogSuffix) && p.Severity == "error" {
					file, pos = p.File, p.Position
					break
				}
			}
			if code == 0 || pos < 0 {
				t.Fatalf("fsck: exit %d, problems %+v; want damage in a .log", code, out.Problems)
			}
			want := fmt.Sprintf("%s at byte %d:", file, pos)
			for _, args := range [][]string{{"consume", dir}, {"consume", dir, "--raw"}, {"consume", dir, "--from", "-1"}, {"produce", dir}} {
				r := invoke(t, "more\n", args...)
				if r.code == 0 || !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "corrupt") != 1 {
					t.Errorf("seglog %s: exit %d, stderr %q; want an error naming %q (fsck's position), saying corrupt once",
						strings.Join(args, " "), r.code, r.stderr, want)
				}
				after := dirSnapshot(t, dir)
				if args[0] == "produce" {
					// A writable open takes the lock before it checks;
					// refused, it removes a .lock it created, which
					// leaves only the directory's mtime changed.
					after["/"] = before["/"]
				}
				vfstest.Unchanged(t, strings.Join(args, " "), before, after)
			}
		})
	}
}

// damageMidBatch writes a log of 500 records in batches of 10 with
// produce, makes its shutdown unclean (the marker removed, the recovery
// point checkpoint left at the end: every batch was synced) and XORs the
// byte at off inside the middle batch.
func damageMidBatch(t *testing.T, dir string, off int) {
	t.Helper()
	mustInvoke(t, numberedLines(1, 500), "produce", dir, "--batch", "10")
	if err := vfs.Default.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	logFile := storedLogs(t, dir)[0]
	data := readVFS(t, logFile)
	bs := splitBatches(t, data)
	pos := 0
	for _, b := range bs[:len(bs)/2] {
		pos += len(b)
	}
	data[pos+off] ^= 0x20
	writeVFS(t, logFile, data)
}

// writeLegacyDamage writes a log whose .log holds two v1 messages (offsets
// 0 and 1, the second with a byte of its CRC-32-protected body flipped)
// and a v2 batch at offset 2, with a recovery point of 3 and no clean
// marker: the damaged entry was synced.
func writeLegacyDamage(t *testing.T, dir string) {
	t.Helper()
	if err := vfs.Default.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	var file []byte
	file = append(file, legacyMessage(0, []byte("legacy-zero"))...)
	at := len(file)
	file = append(file, legacyMessage(1, []byte("legacy-one"))...)
	file[at+record.LogOverhead+10] ^= 0xff
	b := record.NewBuilder(record.None)
	b.SetBaseOffset(2)
	if err := b.Add(record.Record{Offset: 2, Timestamp: 1000, Value: []byte("v2")}); err != nil {
		t.Fatal(err)
	}
	v2, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	file = append(file, bytes.Clone(v2)...)
	writeVFS(t, filepath.Join(dir, segment.FileName(0, segment.LogSuffix)), file)
	writeVFS(t, filepath.Join(dir, "recovery-point-offset-checkpoint"), []byte("0\n1\nlog 0 3\n"))
}

// legacyMessage encodes a v1 message (magic 1) holding value at offset.
func legacyMessage(offset int64, value []byte) []byte {
	body := []byte{1, 0}                             // magic, attributes
	body = binary.BigEndian.AppendUint64(body, 1000) // timestamp
	body = binary.BigEndian.AppendUint32(body, 0xffffffff)
	body = binary.BigEndian.AppendUint32(body, uint32(len(value)))
	body = append(body, value...)
	out := binary.BigEndian.AppendUint64(nil, uint64(offset))
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(body)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
	return append(out, body...)
}
